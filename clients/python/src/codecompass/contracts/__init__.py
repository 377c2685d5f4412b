"""The contracts of the services: per service, the domain types its messages carry and the
converters between them and the generated protos (`convert`). A servicer and its client both
import their service's contract; a contract imports no service and no client (tests/unit/test_layering.py).

`chunk_convert` converts the Chunk message every service shares (its domain type,
`codecompass.common.chunks.Chunk`, is the store's and the policy's vocabulary too)."""
