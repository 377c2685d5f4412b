"""Start-up work skipped: the retrieval process imports lancedb without building the REST
namespace client's API classes, and the learned ranker loads lightgbm without scikit-learn;
both still work whole, and anything that asks for what was skipped gets it. Each check runs in
a fresh interpreter: what a process has imported is the thing under test."""

import os
import subprocess
import sys
import textwrap


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env={**os.environ}, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_retrieval_package_imports_lancedb_without_the_rest_api_classes_and_the_index_works(tmp_path):
    out = run_fresh(f"""
        import sys
        import codecompass.retrieval  # noqa: F401 - defers the client before lancedb
        import lancedb
        import pyarrow as pa
        print("apis at import:", "lance_namespace_urllib3_client.api.table_api" in sys.modules)
        table = lancedb.connect({str(tmp_path)!r}).create_table("t", pa.table({{"a": [1, 2, 3]}}))
        print("rows:", table.count_rows())
        import lance_namespace_urllib3_client as client
        print("asked for:", client.TableApi.__name__, client.__version__ != "",
              "lance_namespace_urllib3_client.api.table_api" in sys.modules)
    """)
    assert "apis at import: False" in out
    assert "rows: 3" in out
    assert "asked for: TableApi True True" in out


def test_a_name_the_client_package_never_had_is_an_attribute_error():
    out = run_fresh("""
        import codecompass.retrieval  # noqa: F401
        import lance_namespace_urllib3_client as client
        try:
            client.NoSuchThing
        except AttributeError as exc:
            print("error:", exc)
        print("whole:", hasattr(client, "DataApi"))
    """)
    assert "error: module 'lance_namespace_urllib3_client' has no attribute 'NoSuchThing'" in out
    assert "whole: True" in out


def test_deferring_after_lancedb_was_imported_changes_nothing():
    out = run_fresh("""
        import sys
        import lancedb  # noqa: F401 - the whole client, as without CodeCompass
        module = sys.modules["lance_namespace_urllib3_client"]
        from codecompass.common.lean_imports import REST_NAMESPACE_CLIENT, without_package_init
        without_package_init(REST_NAMESPACE_CLIENT)
        print("same:", sys.modules["lance_namespace_urllib3_client"] is module, hasattr(module, "TableApi"))
    """)
    assert "same: True True" in out


def test_the_ranker_loads_without_scikit_learn_which_stays_importable():
    out = run_fresh("""
        import importlib.util
        import sys
        from codecompass.policy.learned import load_ranker
        ranker = load_ranker()
        import lightgbm
        print("loaded:", ranker is not None, "sklearn:", "sklearn" in sys.modules,
              "compat:", lightgbm.compat.SKLEARN_INSTALLED)
        # Installed with the models' extra (a development checkout), not in the image.
        if importlib.util.find_spec("sklearn") is not None:
            import sklearn  # noqa: F401 - still there for anything else in the process
        print("importable:", importlib.util.find_spec("sklearn") is None or "sklearn" in sys.modules)
    """)
    assert "loaded: True sklearn: False compat: False" in out
    assert "importable: True" in out
