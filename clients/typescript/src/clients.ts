import {
  credentials as grpcCredentials,
  Metadata,
  type CallOptions as GrpcCallOptions,
  type ChannelCredentials,
  type ChannelOptions,
  type Client,
  type ClientUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  CodeAnalysisServiceClient,
  RenderSymbolsRequest,
  TraceRequest,
  type RenderSymbolsResponse,
  type TraceResponse,
} from './gen/codecompass/v1/analysis';
import {
  DropIndexRequest,
  FindHubsRequest,
  GetIndexStatusRequest,
  IndexWorkspaceRequest,
  ListIndexesRequest,
  RetrievalServiceClient,
  SearchRequest,
  SyncRequest,
  type DeepPartial,
  type DropIndexResponse,
  type FindHubsResponse,
  type GetIndexStatusResponse,
  type IndexWorkspaceResponse,
  type ListIndexesResponse,
  type SearchResponse,
  type SyncResponse,
} from './gen/codecompass/v1/retrieval';
import { callError } from './errors';

/** Per call: how long it may take, in milliseconds, before it fails with DEADLINE_EXCEEDED. */
export interface CallOptions {
  timeoutMs?: number;
}

export interface ClientOptions {
  /** The deadline of a call that names none; 30 s. */
  timeoutMs?: number;
  /** Plaintext unless given (the services listen on loopback by default). */
  credentials?: ChannelCredentials;
  /** Extra @grpc/grpc-js channel options, over this package's message limits. */
  channelOptions?: ChannelOptions;
}

const DEFAULT_TIMEOUT_MS = 30_000;
// A search with full sources, a big file's chunks or an index listing can pass gRPC's 4 MiB
// default; the services accept and send up to 256 MiB (the Python clients' limit too).
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

type UnaryStart<Res> = (metadata: Metadata, options: Partial<GrpcCallOptions>,
                        callback: (error: ServiceError | null, response: Res) => void) => ClientUnaryCall;

/** One service's channel: every call with a deadline, every failure a CodeCompassError. */
abstract class ServiceClient<Stub extends Client> {
  protected readonly stub: Stub;
  private readonly timeoutMs: number;

  protected constructor(readonly service: string, readonly address: string,
                        make: (address: string, credentials: ChannelCredentials, options: ChannelOptions) => Stub,
                        options: ClientOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.stub = make(address, options.credentials ?? grpcCredentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      ...options.channelOptions,
    });
  }

  close(): void {
    this.stub.close();
  }

  protected deadline(options: CallOptions | undefined): Partial<GrpcCallOptions> {
    return { deadline: new Date(Date.now() + (options?.timeoutMs ?? this.timeoutMs)) };
  }

  protected unary<Res>(start: UnaryStart<Res>, options: CallOptions | undefined): Promise<Res> {
    return new Promise((resolve, reject) => {
      start(new Metadata(), this.deadline(options), (error, response) => {
        if (error) reject(callError(this.service, this.address, error));
        else resolve(response);
      });
    });
  }

  protected async *stream<Res>(start: (options: Partial<GrpcCallOptions>) => AsyncIterable<unknown> & { cancel(): void },
                               options: CallOptions | undefined): AsyncGenerator<Res> {
    const call = start(this.deadline(options));
    try {
      for await (const reply of call) yield reply as Res;
    } catch (error) {
      throw callError(this.service, this.address, error);
    } finally {
      // A caller that stops reading early ends the call; after the stream's end this does nothing.
      call.cancel();
    }
  }
}

/** The retrieval service: indexing (to the index writer), search, status. */
export class RetrievalClient extends ServiceClient<RetrievalServiceClient> {
  constructor(address: string, options: ClientOptions = {}) {
    super('retrieval', address, (a, c, o) => new RetrievalServiceClient(a, c, o), options);
  }

  /** Index the workspace, streaming progress until the index is written (or, with
   * waitForEmbeddings, until every chunk has its vector). Give it a deadline that fits a cold index. */
  indexWorkspace(request: DeepPartial<IndexWorkspaceRequest>, options?: CallOptions): AsyncGenerator<IndexWorkspaceResponse> {
    return this.stream((o) => this.stub.indexWorkspace(IndexWorkspaceRequest.fromPartial(request), o), options);
  }

  /** The ranked results from the index as it stands (a read: it never syncs). */
  search(request: DeepPartial<SearchRequest>, options?: CallOptions): Promise<SearchResponse> {
    return this.unary((m, o, cb) => this.stub.search(SearchRequest.fromPartial(request), m, o, cb), options);
  }

  /** Bring the index up to date within the request's budget; the sync goes on behind it. */
  sync(request: DeepPartial<SyncRequest>, options?: CallOptions): Promise<SyncResponse> {
    return this.unary((m, o, cb) => this.stub.sync(SyncRequest.fromPartial(request), m, o, cb), options);
  }

  getIndexStatus(request: DeepPartial<GetIndexStatusRequest>, options?: CallOptions): Promise<GetIndexStatusResponse> {
    return this.unary((m, o, cb) => this.stub.getIndexStatus(GetIndexStatusRequest.fromPartial(request), m, o, cb),
                      options);
  }

  findHubs(request: DeepPartial<FindHubsRequest>, options?: CallOptions): Promise<FindHubsResponse> {
    return this.unary((m, o, cb) => this.stub.findHubs(FindHubsRequest.fromPartial(request), m, o, cb), options);
  }

  listIndexes(options?: CallOptions): Promise<ListIndexesResponse> {
    return this.unary((m, o, cb) => this.stub.listIndexes(ListIndexesRequest.fromPartial({}), m, o, cb), options);
  }

  dropIndex(request: DeepPartial<DropIndexRequest>, options?: CallOptions): Promise<DropIndexResponse> {
    return this.unary((m, o, cb) => this.stub.dropIndex(DropIndexRequest.fromPartial(request), m, o, cb), options);
  }
}

/** The analysis service: symbols read through the TypeScript type checker. */
export class AnalysisClient extends ServiceClient<CodeAnalysisServiceClient> {
  constructor(address: string, options: ClientOptions = {}) {
    super('analysis', address, (a, c, o) => new CodeAnalysisServiceClient(a, c, o), options);
  }

  /** Symbols' source by chunk id (a search result's `chunk.id`), children collapsed unless expanded. */
  renderSymbols(request: DeepPartial<RenderSymbolsRequest>, options?: CallOptions): Promise<RenderSymbolsResponse> {
    return this.unary((m, o, cb) => this.stub.renderSymbols(RenderSymbolsRequest.fromPartial(request), m, o, cb),
                      options);
  }

  /** Who calls a symbol, what it calls, its references, implementations or type hierarchy. */
  trace(request: DeepPartial<TraceRequest>, options?: CallOptions): Promise<TraceResponse> {
    return this.unary((m, o, cb) => this.stub.trace(TraceRequest.fromPartial(request), m, o, cb), options);
  }
}
