"""deploy/compose.yaml: the fleet's rules (migrations before services, health-based order, networks along the edges the
services call)."""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

import yaml

from .common import CheckFailed, Context, GATEWAY_UPSTREAMS, KEY_STORE_USERS, SERVICES, our_binary


def check_compose(ctx: Context) -> str:
    config = ctx.compose_config()   # docker-compose 1.29 `config`: schema 3.8, interpolation, env_file merge
    problems = []
    # The same file against the Compose Specification (what the Compose v2 plugin reads), with jsonschema.
    spec_path = Path("/usr/lib/python3/dist-packages/compose/config/compose_spec.json")
    spec_note = ""
    if spec_path.exists():
        import jsonschema
        raw = yaml.safe_load((ctx.deploy / "compose.yaml").read_text())
        errors = sorted(jsonschema.Draft7Validator(json.loads(spec_path.read_text())).iter_errors(raw), key=str)
        problems += [f"compose-spec: {'/'.join(map(str, e.path))}: {e.message}" for e in errors]
        spec_note = " and the compose-spec schema"
    services = config["services"]
    problems += compose_problems(config)
    text = (ctx.deploy / "compose.yaml").read_text()
    if re.search(r"PASSWORD\s*[:=]\s*[A-Za-z0-9]", text) or re.search(r"postgres://[a-z]+:[A-Za-z0-9]", text):
        problems.append("compose.yaml inlines a password: take it from deploy/.env")
    if problems:
        raise CheckFailed("deploy/compose.yaml", problems)
    return (f"deploy/compose.yaml passes docker-compose 1.29 config{spec_note}; {len(services)} services, "
            "migrations before services, health-based start order; containers share networks only along the edges "
            "they call, every network but the gateway's public one internal")


def compose_problems(config: dict) -> list[str]:
    """The fleet's rules on the output of `docker-compose config`."""
    problems = []
    services = config["services"]
    for short, binary in SERVICES.items():
        svc = services.get(binary)
        if svc is None:
            problems.append(f"no service {binary}")
            continue
        if not svc.get("image", "").startswith(f"en-backend/{binary}:"):
            problems.append(f"{binary}: image is not en-backend/{binary}:<tag>")
        build = svc.get("build", {})
        if build.get("args", {}).get("SERVICE") != binary or not str(build.get("dockerfile", "")).endswith("Dockerfile"):
            problems.append(f"{binary}: build does not use deploy/Dockerfile with SERVICE={binary}")
        if svc.get("environment", {}).get("HTTP_HOST") != "0.0.0.0":
            problems.append(f"{binary}: HTTP_HOST is not 0.0.0.0")
        if svc.get("environment", {}).get("DATABASE_AUTO_MIGRATE") != "false":
            problems.append(f"{binary}: DATABASE_AUTO_MIGRATE should be false (the migrate-* steps migrate)")
        if not svc.get("read_only"):
            problems.append(f"{binary}: root filesystem is not read-only")
        depends = svc.get("depends_on", {})
        if binary not in KEY_STORE_USERS:
            migrate = f"migrate-{short}"
            mig = services.get(migrate)
            if mig is None:
                problems.append(f"no one-shot migration service {migrate}")
            else:
                if mig.get("command") != ["--migrate-only"]:
                    problems.append(f"{migrate}: command is not --migrate-only")
                if mig.get("image") != svc.get("image"):
                    problems.append(f"{migrate}: image differs from {binary}'s")
                if mig.get("restart", "no") != "no":
                    problems.append(f"{migrate}: a one-shot step must not restart")
                if depends.get(migrate, {}).get("condition") != "service_completed_successfully":
                    problems.append(f"{binary}: does not wait for {migrate} to complete successfully")
                if mig.get("depends_on", {}).get("postgres", {}).get("condition") != "service_healthy":
                    problems.append(f"{migrate}: does not wait for a healthy postgres")
        elif depends.get("migrate-submission", {}).get("condition") != "service_completed_successfully":
            problems.append(f"{binary}: does not wait for the key store's migrations, which migrate-submission applies")
    for loop in ("distribution-service", "federation-service", "efgs-gateway"):
        if services.get(loop, {}).get("command") != ["serve"]:
            problems.append(f"{loop}: not run as a loop (command serve)")
    gateway = services.get("gateway", {})
    for name, svc in services.items():
        for dep, cond in (svc.get("depends_on") or {}).items():
            condition = cond.get("condition")
            if condition == "service_healthy":
                target = services.get(dep, {})
                has_check = "healthcheck" in target and not target["healthcheck"].get("disable")
                if not has_check and not str(target.get("image", "")).startswith("en-backend/"):
                    problems.append(f"{name}: waits for {dep} to be healthy, which has no healthcheck")
    for name in GATEWAY_UPSTREAMS:
        if gateway.get("depends_on", {}).get(name, {}).get("condition") != "service_healthy":
            problems.append(f"gateway: does not wait for a healthy {name}")
    published = [p for name, svc in services.items() if name != "gateway" for p in svc.get("ports", [])]
    if published:
        problems.append(f"only the gateway may publish ports, found {published}")
    if "postgres" not in services or "10-en-roles.sh" not in " ".join(services["postgres"].get("volumes", [])):
        problems.append("postgres: deploy/postgres/init.sh is not mounted into /docker-entrypoint-initdb.d")
    problems += compose_network_problems(services, config.get("networks") or {})
    problems += compose_internal_url_problems(services)
    return problems


def compose_internal_url_problems(services: dict) -> list[str]:
    """Every `<PEER>_INTERNAL_URL` a service of ours is given names a compose service, at its INTERNAL_HTTP_PORT, on a
    network the two share."""
    problems = []
    for name, svc in services.items():
        if not our_binary(str(svc.get("image", ""))) or name.startswith("migrate-"):
            continue
        for key, value in (svc.get("environment") or {}).items():
            if not key.endswith("_INTERNAL_URL"):
                continue
            url = urllib.parse.urlsplit(str(value))
            peer = services.get(url.hostname or "")
            if peer is None:
                problems.append(f"{name}: {key}={value} names no compose service")
                continue
            internal_port = (peer.get("environment") or {}).get("INTERNAL_HTTP_PORT")
            if internal_port is None or not url.netloc.endswith(f":{internal_port}"):
                problems.append(f"{name}: {key}={value} is not {url.hostname}'s INTERNAL_HTTP_PORT")
            if not set(svc.get("networks") or {}) & set(peer.get("networks") or {}):
                problems.append(f"{name}: shares no network with {url.hostname}, which {key} names")
    return problems


# Which containers may share a network in compose: the calls the services make, the gateway's upstreams, and
# PostgreSQL with its clients (the services, their migration steps). Anything else is a path an attacker inside one
# container could use.
COMPOSE_EDGES = {
    frozenset(pair) for pair in [
        ("gateway", "test-result-service"), ("gateway", "verification-service"),
        ("gateway", "submission-service"), ("gateway", "portal-service"),
        ("verification-service", "test-result-service"), ("submission-service", "verification-service"),
        ("portal-service", "verification-service"),
        # data donation: the gateway to its app API, submission-service to its internal API (self-report OTPs)
        ("gateway", "data-donation-service"), ("submission-service", "data-donation-service"),
        ("migrate-data-donation", "data-donation-service"),
        # the keys database is shared: its owners and its migration step meet on its network
        ("submission-service", "distribution-service"), ("migrate-submission", "submission-service"),
        ("migrate-submission", "distribution-service"),
        ("migrate-test-result", "test-result-service"), ("migrate-verification", "verification-service"),
        ("migrate-portal", "portal-service"),
        # federation: its callback through the gateway, the key store, the federation gateway; the rehearsal gateway's
        # front, its callbacks to our gateway, its own migration step
        ("gateway", "federation-service"), ("submission-service", "federation-service"),
        ("distribution-service", "federation-service"), ("migrate-submission", "federation-service"),
        ("federation-service", "efgs"), ("efgs", "efgs-gateway"), ("efgs-gateway", "gateway"),
        ("migrate-efgs-gateway", "efgs-gateway"),
    ]
}


# Networks that a deployment may give a route out (internal: false), and who may be on them: federation-service's
# way to a real federation gateway.
EGRESS_NETWORKS = {"federation-efgs": {"federation-service", "efgs"}}


def compose_network_problems(services: dict, networks: dict) -> list[str]:
    problems = []
    members: dict[str, set[str]] = {}
    for name, svc in services.items():
        nets = svc.get("networks") or {}
        if not nets:
            problems.append(f"{name}: joins no network of its own (it would get the default network with everyone)")
        for net in nets:
            members.setdefault(net, set()).add(name)
    for net, names in sorted(members.items()):
        if not (networks.get(net) or {}).get("internal") and names != {"gateway"} \
                and not (net in EGRESS_NETWORKS and names <= EGRESS_NETWORKS[net]):
            problems.append(f"network {net} is not internal but joined by {sorted(names - {'gateway'})}")
        for a in names:
            for b in names:
                if a < b and "postgres" not in (a, b) and frozenset((a, b)) not in COMPOSE_EDGES:
                    problems.append(f"{a} and {b} share the network {net}, an edge neither calls")
    return sorted(set(problems))
