"""The training corpus of our own code models (issue 16, shared with issue 17's learned ranking).

select.py      the written rule that picks the repositories (npm download rank, licence,
               exclusions, a tarball screen, a size/language band measured on the pinned tree)
               and writes manifest.json; its docstring states the rule step by step
manifest.json  what the rule chose: every train repository pinned to a commit with its measures
               and licences, every rejected candidate with its reason, the rule's parameters
               (committed; no third-party source is)
build.py       `make corpus`: checkouts of every manifest repository at its pinned commit under
               models/.work/corpus/<owner>+<name>/, with copies of the benchmark's dev/test code
               removed and files repeated across train repositories kept once
               (models/.work/corpus/dedup.json; `removed_paths()` reads it back)

Rebuilding the corpus needs only the manifest and the mirrors ($BENCH_MIRRORS). Choosing it again
(a new ranking, new parameters) is:

  python -m models.corpus.select candidates        # rank, registry metadata, exclusions
  python -m models.corpus.select pending           # the next repositories to `fetch github:<owner>/<name>`
  python -m models.corpus.select refused O/N WHY   # a fetch the tool refused, with its answer
  python -m models.corpus.select manifest          # judge the fetched ones in rank order; until TARGET pass
"""
