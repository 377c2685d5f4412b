// @codecompass/client: typed clients of the CodeCompass gRPC services (codecompass.v1).
//
// The stubs under ./gen are generated from the protos (`make proto`, ts-proto for @grpc/grpc-js)
// and exported as they are, one namespace per proto file; the clients below wrap the two services
// a program usually calls (retrieval: index, search, status; analysis: read and trace symbols)
// with what every CodeCompass caller gets: a deadline on every call, and failures as one
// `CodeCompassError` whose message is one line that names the service, its address and the code.

export * as analysis from './gen/codecompass/v1/analysis';
export * as chunk from './gen/codecompass/v1/chunk';
export * as embedding from './gen/codecompass/v1/embedding';
export * as rerank from './gen/codecompass/v1/rerank';
export * as retrieval from './gen/codecompass/v1/retrieval';
export * as selection from './gen/codecompass/v1/selection';
export { AnalysisClient, RetrievalClient } from './clients';
export type { CallOptions, ClientOptions } from './clients';
export { CodeCompassError } from './errors';
