"""The training corpus of our own code models (issue 16, shared with issue 17's learned ranking).

select.py   the written rule that picks the repositories (npm download rank, licence, exclusions,
            a size/language band measured on the pinned tree) and writes manifest.json
manifest.json  what the rule chose: every repository pinned to a commit, and every rejected
            candidate with its reason (committed; no third-party source is)
build.py    `make corpus`: checkouts of every manifest repository at its pinned commit under
            models/.work/corpus/, deduplicated by content against the benchmark's dev/test
            repositories and across the train repositories
"""
