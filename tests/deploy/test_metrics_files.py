"""The metrics an SRE adopts (issue 29 §3): the Grafana dashboard and the Prometheus alert rules ask
only for metrics the services declare, every declared metric is documented, and the collector and
the Kubernetes manifests carry metrics to a scraper.

The instruments are read from the two telemetry modules (common/telemetry.py with `ast`,
node_ts_service/src/tracing.ts with a pattern) and named as Prometheus names them: dots as
underscores, the unit as a suffix, `_total` on counters, `_bucket`/`_count`/`_sum` for histograms.
tests/e2e/test_metrics_end_to_end.py checks the same files against the series a real run served.
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TELEMETRY_PY = REPO / "py_services" / "codecompass" / "common" / "telemetry.py"
TELEMETRY_TS = REPO / "node_ts_service" / "src" / "tracing.ts"
DASHBOARD = REPO / "deploy" / "observability" / "grafana-dashboard.json"
ALERT_RULES = REPO / "deploy" / "observability" / "alert-rules.yaml"
SCRAPE_CONFIG = REPO / "deploy" / "observability" / "prometheus.yaml"
COLLECTOR = REPO / "deploy" / "k8s" / "components" / "observability" / "otel-collector.yaml"
DOCS = REPO / "docs" / "observability.md"
# Series Prometheus makes itself or every OpenTelemetry exporter adds (the resource's attributes).
BUILT_IN = {"up", "target_info"}
UNIT_SUFFIXES = {"s": "seconds", "By": "bytes"}
# PromQL words that look like metric names: functions, aggregations, keywords.
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "rate", "irate", "increase", "histogram_quantile", "absent", "by",
    "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "topk", "bottomk",
    "clamp_min", "clamp_max", "time", "vector", "scalar", "label_replace", "humanizePercentage", "humanizeDuration",
}


@cache
def declared() -> dict[str, tuple[str, str]]:
    """{instrument name: (kind, unit)} of every instrument either runtime declares."""
    found: dict[str, tuple[str, str]] = {}
    tree = ast.parse(TELEMETRY_PY.read_text(encoding="utf-8"))
    kinds = {"create_histogram": "histogram", "create_counter": "counter", "create_up_down_counter": "gauge"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in kinds:
            name = node.args[0]
            unit = next(k.value for k in node.keywords if k.arg == "unit")
            assert isinstance(name, ast.Constant) and isinstance(unit, ast.Constant), ast.dump(node)
            found[name.value] = (kinds[node.func.attr], unit.value)
        # The writer's observable gauges are declared in one table: {name: (unit, description)}.
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "INDEX_GAUGES"):
            for name, value in ast.literal_eval(node.value).items():
                found[name] = ("gauge", value[0])
    ts = TELEMETRY_TS.read_text(encoding="utf-8")
    for kind, name, unit in re.findall(r"create(Histogram|Counter)\('([\w.]+)', \{\s*unit: '([^']+)'", ts):
        declared_kind = kind.lower()
        assert found.get(name, (declared_kind, unit)) == (declared_kind, unit), f"{name}: the runtimes disagree"
        found[name] = (declared_kind, unit)
    return found


def prometheus_names(name: str, kind: str, unit: str) -> set[str]:
    base = name.replace(".", "_")
    suffix = UNIT_SUFFIXES.get(unit)
    if suffix and not base.endswith(f"_{suffix}"):
        base = f"{base}_{suffix}"
    if kind == "histogram":
        return {f"{base}_bucket", f"{base}_count", f"{base}_sum"}
    return {f"{base}_total"} if kind == "counter" else {base}


def exported() -> set[str]:
    return {n for name, (kind, unit) in declared().items() for n in prometheus_names(name, kind, unit)}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)  # label lists
    words = set(re.findall(r"(?<![\w.$])[a-zA-Z_:][\w:]*", text))
    return {w for w in words if w not in PROMQL_WORDS and not re.fullmatch(r"\d+(\.\d+)?|e\d*", w)}


def dashboard_targets() -> list[tuple[str, str]]:
    """(panel title, expr) of every query of the dashboard."""
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERT_RULES.read_text(encoding="utf-8"))["groups"]
            for rule in group["rules"]]


def dashboard_metrics() -> set[str]:
    return {name for _, expr in dashboard_targets() for name in metric_names(expr)}


def alert_rule_metrics() -> set[str]:
    return {name for rule in alert_rules() for name in metric_names(rule["expr"])}


def test_metric_names_are_read_from_promql() -> None:
    assert metric_names('sum by (le, x) (rate(a_b_bucket{c="d{e}",f=~"1|2"}[5m])) / ignoring(g) b_total > 0.05') == {
        "a_b_bucket", "b_total"}
    assert metric_names("absent(codecompass_index_count)") == {"codecompass_index_count"}
    assert metric_names('{{ $labels.x }} histogram_quantile(0.95, x_bucket)') == {"x_bucket"}


def test_the_runtimes_declare_the_metrics_the_issue_asks_for() -> None:
    names = declared()
    # Requests, errors and latency per RPC and per MCP tool; index size; embedding queue; sync lag; cache hits.
    for name, kind in [("rpc.server.call.duration", "histogram"), ("mcp.server.operation.duration", "histogram"),
                       ("codecompass.index.size", "gauge"), ("codecompass.embedding.queue.depth", "gauge"),
                       ("codecompass.sync.lag", "gauge"), ("codecompass.cache.requests", "counter")]:
        assert names[name][0] == kind, name


def test_dashboard_panels_query_only_declared_metrics() -> None:
    targets = dashboard_targets()
    assert len(targets) >= 12
    unknown = {(title, name) for title, expr in targets for name in metric_names(expr) - exported() - BUILT_IN}
    assert not unknown, unknown
    # Every metric the services declare has a panel.
    shown = dashboard_metrics()
    assert not {name for name, (kind, unit) in declared().items() if not prometheus_names(name, kind, unit) & shown}


def test_dashboard_is_importable_grafana_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    # The data source is chosen at import (a variable), not a uid of someone else's Grafana.
    (variable,) = dashboard["templating"]["list"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        area = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]


def test_alert_rules_cover_errors_latency_sync_lag_and_a_writer_down() -> None:
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert {"CodeCompassRpcErrorRate", "CodeCompassRpcLatencyP95", "CodeCompassToolErrorRate",
            "CodeCompassSyncLag", "CodeCompassIndexWriterDown"} <= set(rules)
    for name, rule in rules.items():
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, name
        assert re.fullmatch(r"\d+[smh]", rule["for"]) and rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        assert rule["expr"].count("(") == rule["expr"].count(")"), name
    assert "rpc_server_call_duration_seconds_bucket" in rules["CodeCompassRpcLatencyP95"]["expr"]
    assert "histogram_quantile(0.95" in rules["CodeCompassRpcLatencyP95"]["expr"]
    assert "codecompass_sync_lag_seconds" in rules["CodeCompassSyncLag"]["expr"]
    assert rules["CodeCompassIndexWriterDown"]["expr"] == "absent(codecompass_index_count)"
    unknown = alert_rule_metrics() - exported() - BUILT_IN
    assert not unknown, unknown


def test_every_declared_metric_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Metrics and alerts"):]
    documented = set(re.findall(r"^\| `([\w.]+)` \|", section, flags=re.M))
    assert documented == set(declared()), documented ^ set(declared())


def test_collector_has_a_metrics_pipeline_scrapeable_by_prometheus() -> None:
    config = yaml.safe_load(COLLECTOR.read_text(encoding="utf-8"))
    pipeline = config["service"]["pipelines"]["metrics"]
    assert pipeline["receivers"] == ["otlp"]
    (exporter,) = pipeline["exporters"]
    assert exporter.split("/")[0] == "prometheus"
    prometheus = config["exporters"][exporter]
    assert prometheus["endpoint"].endswith(":8889")
    # service.name and service.namespace become labels, as the services' own endpoints write them.
    assert prometheus["resource_to_telemetry_conversion"]["enabled"] is True


def test_scrape_config_keeps_the_labels_the_rules_use() -> None:
    config = yaml.safe_load(SCRAPE_CONFIG.read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    relabels = jobs["codecompass"]["relabel_configs"]
    targets = {r.get("target_label") for r in relabels}
    # CodeCompassTargetDown names the service and the pod.
    assert {"service", "pod"} <= targets
    assert config["rule_files"] == ["alert-rules.yaml"]
