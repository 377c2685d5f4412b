"""Start-up time that third-party packages spend on code CodeCompass never runs.

`import lancedb` imports `lance_namespace`, which imports the models of the generated REST client
`lance_namespace_urllib3_client`; that package's `__init__` also builds every REST API class, each
method wrapped by pydantic's `validate_call`: 1.3 s of CPU on two cores at every start of a
retrieval process, for a REST namespace client that no index of ours uses (they are local paths
or object-store URIs). `defer_rest_namespace_client` stands in for the package module, so only
the submodules asked for load (the models, a third of the cost); anything read from the package
itself runs its real `__init__` first, so code that does use the client gets it whole.

`bpe_openai`'s `__init__` parses three vocabularies in Python (cl100k, o200k, voyage3: 0.9 s of
CPU) for a wrapper whose counts its Rust extension gives alone (`codecompass.common.tokens`
imports only that, through `without_package_init`).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

REST_NAMESPACE_CLIENT = "lance_namespace_urllib3_client"


def defer_rest_namespace_client() -> None:
    """Before the first `import lancedb` of a process: its REST client's package loads only the
    submodules imported from it. A no-op once the package is imported, or when it is absent."""
    without_package_init(REST_NAMESPACE_CLIENT)


def without_package_init(name: str) -> None:
    """Stand in for package `name` without running its `__init__`: its submodules import as ever
    (`importlib.import_module(f"{name}.sub")`; a `from name import sub` reads the package's
    attribute, which loads it whole), and the first attribute read from the package itself runs
    the real `__init__` in the same module object, so code that wants the whole package gets it.
    A no-op once the package is imported, or when it is absent."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    module = importlib.util.module_from_spec(spec)  # its __path__, so submodules import; not executed

    def load_whole(attribute: str) -> object:
        # PEP 562: reached only for a name the package does not have yet. Run the real `__init__`
        # in this module object (the one every importer holds), then answer from it.
        del module.__getattr__
        assert spec.loader is not None
        spec.loader.exec_module(module)
        return _attribute(module, attribute)

    module.__getattr__ = load_whole  # type: ignore[method-assign]
    sys.modules[name] = module


def _attribute(module: ModuleType, name: str) -> object:
    try:
        return module.__dict__[name]
    except KeyError:
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
