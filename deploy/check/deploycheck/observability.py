"""deploy/observability: promtool on the rules and alerts, runbooks, dashboards, every metric read defined somewhere."""

from __future__ import annotations

import json
import re
import shutil

import yaml

from .common import CheckFailed, Context


NGINX_EXPORTER_METRICS = {"nginx_up", "nginx_connections_accepted", "nginx_connections_active",
                          "nginx_connections_handled", "nginx_connections_reading", "nginx_connections_waiting",
                          "nginx_connections_writing", "nginx_http_requests_total"}
# The metrics of prometheus-blackbox-exporter's probes that the rules read (the gateway's TLS certificate).
BLACKBOX_EXPORTER_METRICS = {"probe_success", "probe_ssl_earliest_cert_expiry", "probe_duration_seconds",
                             "probe_ssl_last_chain_expiry_timestamp_seconds"}
# Grafana's own variables in a panel's expression, and what promtool sees in their place.
GRAFANA_VARIABLES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__interval_ms": "60000",
                     "__range_s": "3600", "__range_ms": "3600000"}
GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")
PROMQL_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
PROMQL_NAME = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)")


def expression_metrics(expr: str) -> set[str]:
    """The metric and recording-rule names an expression reads that are ours (en_*, http_server_*, nginx_*, probe_*, or
    recording rules: names with a colon). Label values are removed first; label names and functions never start so."""
    bare = PROMQL_STRING.sub('""', expr)
    return {name for name in PROMQL_NAME.findall(bare)
            if ":" in name or name.startswith(("en_", "http_server_", "nginx_", "probe_"))}


def metric_problems(where: str, expr: str, sources: str, recorded: set[str]) -> list[str]:
    problems = []
    for name in sorted(expression_metrics(expr)):
        if ":" in name:
            if name not in recorded:
                problems.append(f"{where}: {name} is no recording rule of rules.yaml")
        elif name.startswith("nginx_"):
            if name not in NGINX_EXPORTER_METRICS:
                problems.append(f"{where}: {name} is not a metric of prometheus-nginx-exporter")
        elif name.startswith("probe_"):
            if name not in BLACKBOX_EXPORTER_METRICS:
                problems.append(f"{where}: {name} is not a metric of prometheus-blackbox-exporter")
        elif f'"{re.sub(r"_(bucket|sum|count)$", "", name)}"' not in sources and f'"{name}"' not in sources:
            problems.append(f"{where}: no service defines the metric {name}")
    return problems


def check_observability(ctx: Context) -> str:
    """deploy/observability: promtool checks alerts.yaml and rules.yaml and runs alerts.test.yaml; every alert has a
    severity and a runbook that is a heading of deploy/README.md; every dashboard is well-formed (title, uid, panels,
    unique ids) and promtool accepts each panel's expression with Grafana's variables substituted; and every metric
    a rule, alert or panel reads is one the services define (en_*, http_server_*, as a quoted string in Services/ or
    Shared/), one of prometheus-nginx-exporter (nginx_*) or prometheus-blackbox-exporter (probe_*), or a recording
    rule of rules.yaml."""
    folder = ctx.deploy / "observability"
    promtool = shutil.which("promtool")
    if not promtool:
        raise CheckFailed("promtool is missing (Debian package prometheus)")
    problems: list[str] = []
    rule_files = [folder / "rules.yaml", folder / "alerts.yaml"]
    for path in rule_files:
        result = ctx.run([promtool, "check", "rules", str(path)])
        if result.returncode != 0:
            problems += [f"promtool check rules {path.name}: {line}" for line in
                         (result.stdout + result.stderr).strip().splitlines() if line.strip()]
    result = ctx.run([promtool, "test", "rules", "alerts.test.yaml"], cwd=folder)
    if result.returncode != 0:
        problems += [f"promtool test rules alerts.test.yaml: {line}" for line in
                     (result.stdout + result.stderr).strip().splitlines()[-40:] if line.strip()]
    test_groups = yaml.safe_load((folder / "alerts.test.yaml").read_text()).get("tests", [])
    cases = sum(len(t.get("alert_rule_test", [])) + len(t.get("promql_expr_test", [])) for t in test_groups)

    headings = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in (ctx.deploy / "README.md").read_text().splitlines() if line.startswith("#")}
    sources = "\n".join(p.read_text() for p in (ctx.root / "Services").rglob("*.swift"))
    sources += "\n".join(p.read_text() for p in (ctx.root / "Shared").rglob("*.swift"))
    # The gateway's counters, which mtail makes of its access log: each program compiles, and what it declares counts
    # as defined.
    mtail = shutil.which("mtail")
    for program in sorted(folder.glob("*.mtail")):
        if not mtail:
            problems.append(f"{program.name}: mtail is missing (Debian package mtail)")
            break
        result = ctx.run([mtail, "--progs", str(program), "--compile_only"])
        if result.returncode != 0:
            problems += [f"mtail --compile_only {program.name}: {line}" for line in
                         (result.stdout + result.stderr).strip().splitlines() if line.strip()]
        sources += "\n".join(f'"{name}"' for name in
                             re.findall(r"^\s*(?:counter|gauge|histogram)\s+(\w+)", program.read_text(), re.M))
    rules = {path.name: [rule for group in (yaml.safe_load(path.read_text()) or {}).get("groups", [])
                         for rule in group.get("rules", [])] for path in rule_files}
    recorded = {rule["record"] for rule in rules["rules.yaml"] if rule.get("record")}
    alerts = [rule for rule in rules["alerts.yaml"] if rule.get("alert")]
    for file, file_rules in rules.items():
        for rule in file_rules:
            name = rule.get("alert") or rule.get("record") or "?"
            problems += metric_problems(f"{file} {name}", str(rule.get("expr", "")), sources, recorded)
    for rule in alerts:
        name = rule["alert"]
        if rule.get("labels", {}).get("severity") not in ("warning", "critical"):
            problems.append(f"alerts.yaml {name}: severity is not warning or critical")
        if not rule.get("annotations", {}).get("summary"):
            problems.append(f"alerts.yaml {name}: no summary")
        runbook = rule.get("annotations", {}).get("runbook", "")
        if not runbook.startswith("deploy/README.md#") or runbook.split("#", 1)[1] not in headings:
            problems.append(f"alerts.yaml {name}: runbook {runbook!r} is not a heading of deploy/README.md")
    if not alerts:
        problems.append("alerts.yaml: no alert rules")

    # Every panel's expression, variables substituted, as a recording rule of one generated file for promtool.
    dashboards = sorted((folder / "dashboards").glob("*.json"))
    generated: list[dict] = []
    origin: dict[str, str] = {}
    uids: dict[str, str] = {}
    for path in dashboards:
        label = f"dashboards/{path.name}"
        try:
            board = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            problems.append(f"{label}: not JSON: {error}")
            continue
        for key in ("title", "uid", "panels"):
            if not board.get(key):
                problems.append(f"{label}: no {key}")
        if board.get("uid") in uids:
            problems.append(f"{label}: uid {board['uid']!r} is also that of {uids[board['uid']]}")
        uids[board.get("uid")] = label
        if board.get("schemaVersion") != 39:
            problems.append(f"{label}: schemaVersion is {board.get('schemaVersion')!r}, not 39")
        variables = {v.get("name"): v for v in board.get("templating", {}).get("list", [])}
        if variables.get("datasource", {}).get("type") != "datasource":
            problems.append(f"{label}: no datasource variable")
        panels = [p for top in board.get("panels", []) for p in [top] + top.get("panels", [])]
        ids = [p.get("id") for p in panels]
        for duplicate in sorted({i for i in ids if ids.count(i) > 1}, key=str):
            problems.append(f"{label}: panel id {duplicate} is not unique")
        for panel in panels:
            where = f"{label} panel {panel.get('id')} ({panel.get('title', '')!r})"
            if panel.get("type") != "row" and "gridPos" not in panel:
                problems.append(f"{where}: no gridPos")
            for target in panel.get("targets", []):
                expr = target.get("expr", "")
                if not expr:
                    continue
                if re.search(r"\b(rate|irate|increase)\([^\[]*\[(?!\$__rate_interval\]|\d+[smhdwy]\])", expr):
                    problems.append(f"{where}: a range that is neither $__rate_interval nor fixed")
                unknown = set()

                def substitute(match: re.Match) -> str:
                    name = match.group(1) or match.group(2) or match.group(3)
                    if name in GRAFANA_VARIABLES:
                        return GRAFANA_VARIABLES[name]
                    if name in variables:
                        return ".+"   # our variables stand in label matchers (=~"$service")
                    unknown.add(name)
                    return match.group(0)

                promql = GRAFANA_VARIABLE.sub(substitute, expr)
                for name in sorted(unknown):
                    problems.append(f"{where}: ${name} is no variable of the dashboard")
                problems += metric_problems(where, promql, sources, recorded)
                record = f"panel:{len(generated)}"
                origin[record] = f"{where} {target.get('refId', '')}"
                generated.append({"record": record, "expr": promql})
    if not dashboards:
        problems.append("no dashboards in deploy/observability/dashboards")
    panel_rules = ctx.work / "dashboard-expressions.yaml"
    panel_rules.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": generated}]}, sort_keys=False))
    result = ctx.run([promtool, "check", "rules", str(panel_rules)])
    if result.returncode != 0:
        output = result.stdout + result.stderr
        for line in output.strip().splitlines():
            # promtool names the failing rule by its position ("group "dashboards", rule 3, ..."): map it back.
            found = re.search(r"rule (\d+)", line)
            if found and 0 < int(found.group(1)) <= len(generated):
                line = f"{origin[generated[int(found.group(1)) - 1]['record']]}: {line.strip()}"
            if line.strip() and not line.startswith("Checking"):
                problems.append(f"promtool check rules (panel expressions): {line.strip()}")
    if problems:
        raise CheckFailed("deploy/observability", problems)
    return (f"deploy/observability: alerts.yaml ({len(alerts)} alerts) and rules.yaml ({len(recorded)} recording "
            f"rules) pass promtool check rules, alerts.test.yaml ({len(test_groups)} tests, {cases} cases) passes "
            f"promtool test rules, each "
            f"alert has a severity and a runbook heading; {len(dashboards)} dashboards well-formed with "
            f"{len(generated)} expressions promtool accepts; every metric read is one the services, mtail, the "
            f"nginx or the blackbox exporter define, or a recording rule")
