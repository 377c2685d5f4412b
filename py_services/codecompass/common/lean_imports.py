"""Start-up time that third-party packages spend on code CodeCompass never runs.

`import lancedb` imports `lance_namespace`, which imports the models of the generated REST client
`lance_namespace_urllib3_client`; that package's `__init__` also builds every REST API class, each
method wrapped by pydantic's `validate_call`: 1.3 s of CPU on two cores at every start of a
retrieval process, for a REST namespace client that no index of ours uses (they are local paths
or object-store URIs). `without_package_init` stands in for the package module, so only
the submodules asked for load (the models, a third of the cost); anything read from the package
itself runs its real `__init__` first, so code that does use the client gets it whole.

`bpe_openai`'s `__init__` parses three vocabularies in Python (cl100k, o200k, voyage3: 0.9 s of
CPU) for a wrapper whose counts its Rust extension gives alone (`codecompass.common.tokens`
imports only that, through `without_package_init`).

`lightgbm` imports scikit-learn whenever it is installed (the models' extra installs it): 1.7 s of
scipy at each retrieval start, for estimator classes the learned ranker never uses (a Booster is
the whole model). `import_without` imports it with scikit-learn hidden.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

REST_NAMESPACE_CLIENT = "lance_namespace_urllib3_client"


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


def import_without(name: str, hidden: str) -> ModuleType:
    """Module `name`, imported while package `hidden` cannot be (`import hidden` raises ImportError,
    which an optional dependency's guard expects). Hidden only during that import: `hidden` stays
    importable for anything else in the process. Once imported, `name` is returned as it is."""
    if name in sys.modules:
        return sys.modules[name]
    hide = hidden not in sys.modules
    if hide:
        sys.modules[hidden] = None  # type: ignore[assignment]
    try:
        return importlib.import_module(name)
    finally:
        if hide:
            del sys.modules[hidden]


def _attribute(module: ModuleType, name: str) -> object:
    try:
        return module.__dict__[name]
    except KeyError:
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
