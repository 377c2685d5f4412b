"""The `codecompass` command: runs the services locally and answers through the gateway's pipeline.

A sibling of `codecompass_gateway` in the gateway's distribution, not part of `codecompass`: the CLI
calls the gateway, which calls the services, never the other way round (tests/unit/test_layering.py).
"""
