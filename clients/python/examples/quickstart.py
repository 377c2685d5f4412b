"""Index a folder, follow the index's progress stream, search it, read the best symbol, and see an
error as one line: the typed clients of `codecompass-client` against running services.

    python quickstart.py /absolute/path/to/project "where are tokens validated"

Addresses from the environment, as the services and the CLI name them: RETRIEVAL_ADDR (default
127.0.0.1:50053, `codecompass up`'s port) and ANALYSIS_ADDR (default 127.0.0.1:50051).
"""

from __future__ import annotations

import argparse
import os
import sys

from codecompass.clients import ServiceError
from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.analysis.model import RenderRequest
from codecompass.contracts.retrieval.model import SearchQuery

# A cold index of a large workspace takes minutes; a search or a render, well under a second.
INDEX_TIMEOUT_S = 600.0
CALL_TIMEOUT_S = 30.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", help="absolute path of the folder to index")
    parser.add_argument("query", nargs="?", default="where are tokens validated")
    args = parser.parse_args(argv)
    retrieval = RetrievalClient(os.environ.get("RETRIEVAL_ADDR", "127.0.0.1:50053"))
    analysis = AnalysisClient(os.environ.get("ANALYSIS_ADDR", "127.0.0.1:50051"))
    try:
        # 1. Index the folder; the stream reports each step until the index is written (and, asked
        # to wait for embeddings, until every chunk has its vector), also when nothing moved.
        last = ""
        for progress in retrieval.index(args.workspace, wait_for_embeddings=True, timeout_s=INDEX_TIMEOUT_S):
            line = (f"index: {progress.phase.value} files {progress.files_done}/{progress.files_total} "
                    f"chunks {progress.chunks_done} embedded {progress.embeddings_done}/{progress.embeddings_total}")
            if line != last:
                print(line)
                last = line
        # 2. Search it.
        found = retrieval.search(SearchQuery(args.workspace, args.query, limit=3), CALL_TIMEOUT_S)
        for result in found.results:
            chunk = result.chunk
            print(f"search: {result.score:.3f} {chunk.relative_path}:{chunk.start_line} {chunk.qualified_name}")
        # 3. Read the best symbol: its source, as the analysis service renders it.
        if found.results:
            best = found.results[0].chunk
            [symbol] = analysis.render(args.workspace, [RenderRequest(best.id, relative_path=best.relative_path)],
                                       CALL_TIMEOUT_S)
            if symbol is not None:
                print(f"symbol: {symbol.qualified_name} ({symbol.relative_path}:{symbol.start_line}-"
                      f"{symbol.end_line}, {symbol.token_count} tokens)")
                print("\n".join(symbol.source.splitlines()[:8]))
        # 4. The index as it stands now.
        status = retrieval.status(args.workspace, CALL_TIMEOUT_S)
        print(f"status: {status.indexing_status.value} files {status.files} chunks {status.chunks} "
              f"embedded {status.embedded_chunks} model {status.embedding_model_id}")
        # 5. A failed call is a ServiceError: the service, its address, the code, the service's words.
        try:
            retrieval.search(SearchQuery(args.workspace, ""), CALL_TIMEOUT_S)
        except ServiceError as exc:
            print(f"error: {exc.user_message()}")
        return 0
    except ServiceError as exc:
        print(f"quickstart: {exc}", file=sys.stderr)
        return 1
    finally:
        retrieval.close()
        analysis.close()


if __name__ == "__main__":
    sys.exit(main())
