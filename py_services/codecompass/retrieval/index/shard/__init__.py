"""Indexing spread over workers: N processes each chunk and embed a shard of the workspace's files
and write their rows themselves, uncommitted; the index's one writer commits them all at once.

Why Lance's own fragment API, not Ray. A Lance table is a list of fragments (data files) named by
a manifest; a commit writes a new manifest. `lance.fragment.write_fragments` writes data files
and returns their metadata *without* committing, and `LanceDataset.commit(Append(fragments))`
adds any number of them in one new version, conditionally on the version it read. That is the
whole protocol a distributed write needs, and it is what Ray's Lance integration
(`ray.data.Dataset.write_lance`, `lance.ray`) runs underneath: its tasks call the same
`write_fragments` and its driver the same commit. Ray would add a cluster runtime (a head node,
an object store, its own scheduler and failure model) to what Kubernetes already gives us: an
Indexed Job of N pods, each knowing its index (JOB_COMPLETION_INDEX), retried when it fails, and
one writer that commits.

Who runs the workers (`retrieval.shard_runner`):
- `processes` (the default): the writer starts them as N local processes (`run_shards`) and hands
  them the plan as a file.
- `job`: the workers are the pods of a Kubernetes Indexed Job, started by the Job controller, not
  by the writer, on machines that share no disk with it. The writer posts the plan in the index
  itself (`PlanBoard`: the `shard_plans` table, beside `shard_results`) and waits (`PostedShards`)
  for every shard's result, within the IndexWorkspace call's deadline (at most
  long_rpc_timeout_s) and for as long as its caller is there. A pod needs only the index root
  (CODECOMPASS_RETRIEVAL_DB_URI, credentials in CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS) and the
  workspace id: `python -m codecompass.retrieval.index.shard work --workspace-id ID` finds the index by
  the id's key (location.py), waits for an open plan (`--plan-wait-s`: the Job may start before
  the writer has scanned), runs shard $JOB_COMPLETION_INDEX, and delivers. Its analysis service
  must see the workspace at the writer's path (the plan's root), as with local workers. Kubernetes:

      codecompass index --workers N PATH        # against the writer (or the CronJob running it)
      kubectl create job writer-shards-1 --from=cronjob/writer-shards   # an Indexed Job from
                                                # the template (deploy/k8s components/sharded-index), completions N

  A board holds one plan, the newest: posting one replaces the last, so an index has at most one
  open plan. A plan ends committed, timed out (a shard never reported: the error names how many
  did and how to start the Job), cancelled (its caller went away, the writer stopped) or failed,
  and stays on the board, ended, until the next: a worker that finds it ended, or whose plan ended
  while it worked, writes nothing. (A writer killed while it waited leaves its plan open: pods may
  still deliver to it, unread, until the next post replaces it.) Exit codes, for the Job's retries
  (backoffLimitPerIndex) and podFailurePolicy: 0 delivered, or nothing to do (the plan was
  committed without this worker); 1 failed, worth a retry (a dependency down, no plan posted in
  time, the plan ended uncommitted); 2 not worth one (bad arguments, settings or plan).

The shape:
1. The writer scans the workspace and opens the index (the tables exist from then on), then
   makes a plan (`make_plan`): the root, the index URI, the index identity, and the files of each
   shard (by a stable hash of the path, `shard_of`). Storage options never go into the plan:
   they may hold credentials, so workers read them from their environment
   (CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS), as the services do.
2. Each worker (`python -m codecompass.retrieval.index.shard work --plan PLAN.json --shard I`, or
   `--workspace-id ID` to find the plan in the index) chunks its files through the analysis
   service, computes static vectors (and primary ones when the plan says so), writes its rows as
   uncommitted fragments (`ChunkWriter.stage`) in bounded batches, and hands its `ShardResult`
   (fragment metadata and catalog entries) to the writer as a row of the index's `shard_results`
   table, so no disk is shared: a worker needs only the index URI, whether a local folder or
   `s3://`.
3. Once every shard delivered, the writer commits (`commit_shards`): pending marks, then the
   texts and the chunks (one version each, `ChunkWriter.commit_staged`), then the catalog.

What readers see: nothing of a shard until step 3, then every chunk of every shard at once.
A failed or killed worker commits nothing (the writer commits only when all succeeded); the data
files it wrote are referenced by no version, invisible, and Lance's cleanup (run by maintenance,
`optimize(cleanup_older_than=...)`) deletes such unreferenced files once they are 7 days old
(younger ones might belong to a write still in flight). A writer killed during step 3 leaves
what `Catalog` and `ChunkWriter.commit_staged` describe for a killed sync: the files stay pending
and the next sync rewrites them; nothing is duplicated.

The modules, a job each: `plan` (the plan, and how a shard fails), `board` (the plan board an
Indexed Job's pods read), `worker` (one shard chunked, vectorised and staged), `results` (a
shard's result, its delivery through `shard_results`, the writer's commit of them all), the two
runners `processes` and `job`, and `__main__` (the worker command).
"""
