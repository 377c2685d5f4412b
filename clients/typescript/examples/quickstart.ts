// Index a folder, follow the index's progress stream, search it, read the best symbol, and see an
// error as one line: @codecompass/client against running services.
//
//   npx tsc quickstart.ts && node quickstart.js /absolute/path/to/project "where are tokens validated"
//
// Addresses from the environment, as the services and the CLI name them: RETRIEVAL_ADDR (default
// 127.0.0.1:50053, `codecompass up`'s port) and ANALYSIS_ADDR (default 127.0.0.1:50051).
import { AnalysisClient, CodeCompassError, RetrievalClient, retrieval } from '@codecompass/client';

// A cold index of a large workspace takes minutes; a search or a render, well under a second.
const INDEX_TIMEOUT_MS = 600_000;

async function main(): Promise<number> {
  const [workspace, query = 'where are tokens validated'] = process.argv.slice(2);
  if (!workspace) {
    console.error('usage: node quickstart.js /absolute/path/to/project [query]');
    return 2;
  }
  const index = new RetrievalClient(process.env.RETRIEVAL_ADDR ?? '127.0.0.1:50053');
  const analysis = new AnalysisClient(process.env.ANALYSIS_ADDR ?? '127.0.0.1:50051');
  try {
    // 1. Index the folder; the stream reports each step until the index is written (and, asked to
    // wait for embeddings, until every chunk has its vector), also when nothing moved.
    const progressStream = index.indexWorkspace({ workspaceRoot: workspace, waitForEmbeddings: true },
                                                { timeoutMs: INDEX_TIMEOUT_MS });
    let last = '';
    for await (const progress of progressStream) {
      const line = `index: ${retrieval.indexPhaseToJSON(progress.phase)} files ${progress.filesDone}/${progress.filesTotal}`
                   + ` chunks ${progress.chunksDone} embedded ${progress.embeddingsDone}/${progress.embeddingsTotal}`;
      if (line !== last) console.log(line);
      last = line;
    }
    // 2. Search it.
    const found = await index.search({ workspaceRoot: workspace, query, limit: 3 });
    for (const result of found.results) {
      const chunk = result.chunk;
      console.log(`search: ${result.score.toFixed(3)} ${chunk?.relativePath}:${chunk?.startLine} ${chunk?.qualifiedName}`);
    }
    // 3. Read the best symbol: its source, as the analysis service renders it.
    const best = found.results[0]?.chunk;
    if (best) {
      const rendered = await analysis.renderSymbols({
        workspaceRoot: workspace, specs: [{ symbolId: best.id, relativePath: best.relativePath }],
      });
      for (const symbol of rendered.symbols) {
        console.log(`symbol: ${symbol.qualifiedName} (${symbol.relativePath}:${symbol.startLine}-${symbol.endLine},`
                    + ` ${symbol.tokenCount} tokens)`);
        console.log(symbol.source.split('\n').slice(0, 8).join('\n'));
      }
    }
    // 4. The index as it stands now.
    const status = await index.getIndexStatus({ workspaceRoot: workspace });
    console.log(`status: ${retrieval.indexingStatusToJSON(status.indexingStatus)} files ${status.files}`
                + ` chunks ${status.chunks} embedded ${status.embeddedChunks} model ${status.embeddingModelId}`);
    // 5. A failed call is a CodeCompassError: the service, its address, the code, the service's words.
    try {
      await index.search({ workspaceRoot: workspace, query: '' });
    } catch (error) {
      if (!(error instanceof CodeCompassError)) throw error;
      console.log(`error: ${error.message}`);
    }
    return 0;
  } catch (error) {
    if (!(error instanceof CodeCompassError)) throw error;
    console.error(`quickstart: ${error.message}`);
    return 1;
  } finally {
    index.close();
    analysis.close();
  }
}

main().then((code) => { process.exitCode = code; }, (error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
