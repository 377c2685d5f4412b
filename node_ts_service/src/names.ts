// The analysis service's one name: service.name in traces, `service` in its logs, the prefix of
// its start-up errors, the stem of its ANALYSIS_* variables, its process name in `codecompass up`.
// Every service's name lives in clients/python/src/codecompass/common/names.py; a test compares the two.
// (codecompass.v1.CodeAnalysisService is the gRPC contract it implements, not its name.)
export const SERVICE_NAME = 'analysis';
// Lets a shared trace backend tell CodeCompass's services from another product's of the same name.
export const SERVICE_NAMESPACE = 'codecompass';
