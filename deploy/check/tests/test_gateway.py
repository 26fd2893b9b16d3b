"""The gateway rules (deploycheck.gateway): the committed template, compose's gateway settings and the federation
component's gateway in the production example pass, and each rule fires on a copy broken in one place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import container, fires, named
from deploycheck.common import PLACEHOLDER, k8s_container_env
from deploycheck.gateway import (gateway_env_problems, gateway_rate_problems, gateway_template_problems,
                                 k8s_federation_gateway_problems, nginx_blocks, rate_per_second)

GATEWAY = Path(__file__).resolve().parents[3] / "deploy" / "gateway"
TEMPLATE = (GATEWAY / "gateway.conf.template").read_text()


def placeholders(*names: str) -> set[str]:
    return {p for name in names for p in PLACEHOLDER.findall((GATEWAY / f"{name}.conf.template").read_text())}


# compose mounts the federation callback server's template next to the gateway's.
COMPOSE_PLACEHOLDERS = placeholders("gateway", "federation")
FEDERATION_PLACEHOLDERS = placeholders("gateway", "federation", "status")


def edit(text: str, old: str, new: str, after: str = "") -> str:
    """The text with the first `old` after `after` replaced; fails when either is missing."""
    at = text.index(old, text.index(after) if after else 0)
    return text[:at] + new + text[at + len(old):]


@pytest.fixture
def env(compose) -> dict[str, str]:
    return {k: str(v) for k, v in compose["services"]["gateway"]["environment"].items()}


# ---- nginx_blocks ----

def test_nginx_blocks():
    blocks = nginx_blocks("# a comment { ;\nworker_processes 1;\nhttp {\n    include mime.types;  # trailing }\n"
                          "    server {\n        listen 80;\n        location / { return 404; }\n    }\n"
                          "    log_format x '$a#b';\n}\n")
    assert [b["header"] for b in blocks] == ["", "http", "server", "location /"]
    assert [[p["header"] for p in b["parents"]] for b in blocks] == [[], [], ["http"], ["http", "server"]]
    assert [b["body"] for b in blocks] == [["worker_processes 1"], ["include mime.types", "log_format x '$a#b'"],
                                           ["listen 80"], ["return 404"]]


def test_nginx_blocks_of_the_template():
    blocks = nginx_blocks(re.sub(r"\$\{(\w+)\}", r"$\1", TEMPLATE))
    servers = [b for b in blocks if b["header"] == "server"]
    assert len(servers) == 3 and all(b["parents"] == [] for b in servers)
    jwks = next(b for b in blocks if b["header"] == "location = /.well-known/jwks.json")
    assert jwks["parents"] == [servers[2]]
    assert jwks["body"] == ["limit_req zone=portal_client burst=$GATEWAY_PORTAL_CLIENT_BURST nodelay",
                            "limit_req zone=portal burst=$GATEWAY_PORTAL_BURST nodelay", "proxy_pass http://portal_web"]


def test_nginx_blocks_keep_a_quoted_regex_whole():
    blocks = nginx_blocks('server {\n    location ~ "^/a/(b|c)(/[0-9]{0,64})?$" {\n        limit_req zone=x;\n'
                          '        return 200 "{;}";  # it\'s a comment\n    }\n}\n')
    assert [b["header"] for b in blocks] == ["", "server", 'location ~ "^/a/(b|c)(/[0-9]{0,64})?$"']
    assert blocks[2]["body"] == ["limit_req zone=x", 'return 200 "{;}"']


def test_the_quoted_circuit_breaker_location_is_checked():
    header = 'location ~ "^/circuit-breaker/(exposure-notification|venue)/resolution(/[0-9A-Za-z]{0,64})?$"'
    start = TEMPLATE.index(header)
    end = TEMPLATE.index("}", TEMPLATE.index("proxy_pass", start))
    location = TEMPLATE[start:end]
    unlimited = "\n".join(line for line in location.splitlines() if "limit_req " not in line)
    assert unlimited != location
    problems = gateway_template_problems(TEMPLATE.replace(location, unlimited))
    assert fires(problems, f"template: {header} has no per-client limit")
    assert fires(problems, f"template: {header} has no global ceiling")


# ---- gateway_template_problems ----

def test_committed_template_passes():
    assert gateway_template_problems(TEMPLATE) == []


@pytest.mark.parametrize("old, new, fragment", [
    ("proxy_set_header cwa-fake $http_cwa_fake;", "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
     "`proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for` uses $proxy_add_x_forwarded_for: the client's"),
    ("proxy_set_header X-Gateway-Secret",
     "proxy_set_header X-Real-IP $remote_addr;\n    proxy_set_header X-Gateway-Secret",
     "uses $remote_addr: the client's address"),
    ("$upstream_status $request_id';", "$upstream_status $request_id $gateway_client';",
     "uses $gateway_client: the client's address"),
    ("add_header Cache-Control \"public,max-age=300\";", "add_header X-Client $gateway_client_key;",
     "`add_header X-Client $gateway_client_key` uses $gateway_client_key"),
    ('js_var $gateway_client_key "${GATEWAY_CLIENT_KEY}";',
     'js_var $gateway_client_key "${GATEWAY_CLIENT_KEY}$remote_addr";',
     "uses $gateway_client_key, $remote_addr"),
    ("limit_req_zone $gateway_client zone=app_client", "limit_req_zone $binary_remote_addr zone=app_client",
     "uses $binary_remote_addr"),
    ("return 404;", "return 200 $realip_remote_addr;", "`return 200 $realip_remote_addr` uses $realip_remote_addr"),
    ("if ($ssl_client_verify != SUCCESS) {", "if ($http_x_forwarded_for) {", "`if ($http_x_forwarded_for)` uses"),
], ids=["forwarded-header", "real-ip-header", "log-format", "response-header", "js-var", "zone-key", "response",
        "block-header"])
def test_no_address_outside_the_per_client_zones(old, new, fragment):
    assert not fires(gateway_template_problems(TEMPLATE), fragment)
    assert fires(gateway_template_problems(edit(TEMPLATE, old, new)), fragment)


@pytest.mark.parametrize("variable", ["$remote_addr", "$remote_port"])
def test_no_address_in_a_log_format(variable):
    fragment = "template: a log format holds the client's address"
    assert not fires(gateway_template_problems(TEMPLATE), fragment)
    broken = edit(TEMPLATE, "'$time_iso8601 $server_port", f"'$time_iso8601 {variable} $server_port")
    assert fires(gateway_template_problems(broken), fragment)


def test_a_zone_is_keyed_per_client():
    fragment = "template: no limit_req_zone is keyed by $gateway_client (per client)"
    assert not fires(gateway_template_problems(TEMPLATE), fragment)
    broken = TEMPLATE.replace("limit_req_zone $gateway_client zone=", "limit_req_zone $server_port zone=")
    assert broken != TEMPLATE
    assert fires(gateway_template_problems(broken), fragment)


@pytest.mark.parametrize("location, zone, fragment", [
    ("location = /version/v1/diagnosis-keys {", "app_client",
     "template: location = /version/v1/diagnosis-keys has no per-client limit"),
    ("location = /version/v1/diagnosis-keys {", "app",
     "template: location = /version/v1/diagnosis-keys has no global ceiling"),
    ("location ~ ^/version/v1/(testresult|tan)$ {", "app_client",
     "template: location ~ ^/version/v1/(testresult|tan)$ has no per-client limit"),
    ("location = /.well-known/jwks.json {", "portal_client",
     "template: location = /.well-known/jwks.json has no per-client limit"),
    ("location ~ ^/local-risk(/preview|/publish)?$ {", "portal",
     "template: location ~ ^/local-risk(/preview|/publish)?$ has no global ceiling"),
    ("location = /version/v1/registrationToken {", "registration",
     "template: location = /version/v1/registrationToken lacks the registration budget (teleTAN guessing)"),
    ("location ~ ^/circuit-breaker/(exposure-notification|venue)/request$ {", "circuit_breaker",
     "template: location ~ ^/circuit-breaker/(exposure-notification|venue)/request$ lacks the circuit_breaker budget"),
], ids=["app-client", "app", "verification-client", "portal-client", "portal", "registration", "circuit-breaker"])
def test_every_proxied_location_is_limited(location, zone, fragment):
    assert not fires(gateway_template_problems(TEMPLATE), fragment)
    lines = TEMPLATE[TEMPLATE.index(location):].splitlines()
    line = next(d for d in lines if d.strip().startswith(f"limit_req zone={zone} "))
    assert fires(gateway_template_problems(edit(TEMPLATE, line + "\n", "", after=location)), fragment)


def test_a_new_proxied_location_needs_both_limits():
    new = "    location = /new { proxy_pass http://verification_app; }\n"
    added = edit(TEMPLATE, "    location / {", new + "    location / {")
    problems = gateway_template_problems(added)
    assert fires(problems, "template: location = /new has no per-client limit")
    assert fires(problems, "template: location = /new has no global ceiling")


@pytest.mark.parametrize("zone", ["registration", "circuit_breaker"])
def test_the_tight_zones_are_per_client(zone):
    fragment = f"template: the {zone} zone is not per client"
    assert not fires(gateway_template_problems(TEMPLATE), fragment)
    broken = edit(TEMPLATE, f"limit_req_zone $gateway_client zone={zone}:",
                  f"limit_req_zone $server_port zone={zone}:")
    assert fires(gateway_template_problems(broken), fragment)


# ---- gateway_env_problems ----

def test_committed_compose_env_passes(env):
    assert gateway_env_problems(env, COMPOSE_PLACEHOLDERS) == []


@pytest.mark.parametrize("mutate, fragment", [
    (lambda e: e.pop("GATEWAY_APP_PORT"), "no value for GATEWAY_APP_PORT"),
    (lambda e: e.update(GATEWAY_LAB_CA=""), "no value for GATEWAY_LAB_CA"),
    (lambda e: e.update(GATEWAY_APP_PORTS="8443"), "GATEWAY_APP_PORTS set but not in the template"),
    (lambda e: e.update(GATEWAY_CLIENT_KEY="c2VjcmV0"), "GATEWAY_CLIENT_KEY set: it is made anew at every start"),
    (lambda e: e.pop("NGINX_ENVSUBST_FILTER"), "NGINX_ENVSUBST_FILTER does not admit every GATEWAY_* placeholder"),
    (lambda e: e.update(NGINX_ENVSUBST_FILTER="^GATEWAY_APP_"), "NGINX_ENVSUBST_FILTER does not admit every"),
    (lambda e: e.update(NGINX_ENVSUBST_OUTPUT_DIR="/etc/nginx/templates"),
     "NGINX_ENVSUBST_OUTPUT_DIR is not /etc/nginx/conf.d"),
    (lambda e: e.update(GATEWAY_BIND="127.0.0.1"), "GATEWAY_BIND is not 0.0.0.0"),
], ids=["missing", "empty", "extra", "fixed-client-key", "no-filter", "narrow-filter", "output-dir", "bind"])
def test_gateway_env(env, mutate, fragment):
    assert not fires(gateway_env_problems(env, COMPOSE_PLACEHOLDERS), fragment)
    mutate(env)
    assert fires(gateway_env_problems(env, COMPOSE_PLACEHOLDERS), fragment)


def test_gateway_env_defaults_the_output_dir(env):
    del env["NGINX_ENVSUBST_OUTPUT_DIR"]
    assert gateway_env_problems(env, COMPOSE_PLACEHOLDERS) == []


def test_gateway_env_placeholders_come_from_the_templates(env):
    assert fires(gateway_env_problems(env, placeholders("gateway")), "GATEWAY_FEDERATION_UPSTREAM set but not in")


# ---- rate_per_second and gateway_rate_problems ----

@pytest.mark.parametrize("rate, per_second", [
    ("10r/s", 10), ("2000r/s", 2000), ("2r/m", 2 / 60), ("60r/m", 1), ("0r/s", 0),
    ("10r/h", None), ("10 r/s", None), ("1.5r/s", None), ("r/s", None), ("10", None), ("", None),
])
def test_rate_per_second(rate, per_second):
    assert rate_per_second(rate) == per_second


def test_committed_rates_pass(env):
    assert gateway_rate_problems(env) == []


@pytest.mark.parametrize("key, value, fragment", [
    ("GATEWAY_APP_RATE", "2000r/h", "GATEWAY_APP_RATE=2000r/h is not N r/s or N r/m"),
    ("GATEWAY_LAB_RATE", "50 r/s", "GATEWAY_LAB_RATE=50 r/s is not N r/s or N r/m"),
    ("GATEWAY_PORTAL_BURST", "40k", "GATEWAY_PORTAL_BURST=40k is not a number"),
    ("GATEWAY_REGISTRATION_BURST", "", "GATEWAY_REGISTRATION_BURST= is not a number"),
    ("GATEWAY_APP_CLIENT_RATE", "2000r/s",
     "GATEWAY_APP_CLIENT_RATE (2000r/s) is not below GATEWAY_APP_RATE (2000r/s): one client could spend every phone's"),
    ("GATEWAY_PORTAL_CLIENT_RATE", "1200r/m",
     "GATEWAY_PORTAL_CLIENT_RATE (1200r/m) is not below GATEWAY_PORTAL_RATE (20r/s): one client could spend every"),
    ("GATEWAY_REGISTRATION_RATE", "600r/m",
     "GATEWAY_REGISTRATION_RATE (600r/m) is not below GATEWAY_APP_CLIENT_RATE (10r/s): registrations would have"),
    ("GATEWAY_CIRCUIT_BREAKER_RATE", "2r/m",
     "GATEWAY_CIRCUIT_BREAKER_RATE (2r/m) and _BURST (5) let one client send 125 approval requests an hour, not "
     "below NHS_CB_SPIKE_MINIMUM (100)"),
    ("GATEWAY_CIRCUIT_BREAKER_BURST", "40",
     "GATEWAY_CIRCUIT_BREAKER_RATE (1r/m) and _BURST (40) let one client send 100 approval requests an hour"),
], ids=["rate-unit", "rate-space", "burst-suffix", "burst-empty", "app-client", "portal-client", "registration",
        "circuit-breaker-rate", "circuit-breaker-burst"])
def test_gateway_rates(env, key, value, fragment):
    assert not fires(gateway_rate_problems(env), fragment)
    env[key] = value
    assert fires(gateway_rate_problems(env), fragment)


def test_a_budget_just_below_its_ceiling_passes(env):
    env["GATEWAY_REGISTRATION_RATE"] = "599r/m"
    env["GATEWAY_PORTAL_CLIENT_RATE"] = "19r/s"
    assert gateway_rate_problems(env) == []


# ---- k8s_federation_gateway_problems ----

@pytest.fixture
def federation(render) -> list[dict]:
    return render("overlays/production-example")


def env_var(docs: list[dict], deployment: str, name: str) -> dict:
    return next(e for e in container(docs, "Deployment", deployment)["env"] if e["name"] == name)


def test_committed_federation_gateway_passes(federation):
    env: dict[str, str] = {}
    assert k8s_federation_gateway_problems(federation, FEDERATION_PLACEHOLDERS, env) == []
    assert env == k8s_container_env(container(federation, "Deployment", "gateway"))


def test_the_base_has_no_federation_gateway(render):
    problems = k8s_federation_gateway_problems(render("base"), FEDERATION_PLACEHOLDERS, {})
    assert fires(problems, "federation.conf.template is not mounted")


def test_no_gateway_deployment(federation):
    federation.remove(named(federation, "Deployment", "gateway"))
    assert k8s_federation_gateway_problems(federation, FEDERATION_PLACEHOLDERS, {}) == ["no gateway Deployment"]


def mounts(docs: list[dict]) -> dict[str, dict]:
    return {m["mountPath"]: m for m in container(docs, "Deployment", "gateway")["volumeMounts"]}


def volumes(docs: list[dict]) -> dict[str, dict]:
    return {v["name"]: v for v in named(docs, "Deployment", "gateway")["spec"]["template"]["spec"]["volumes"]}


def drop_mount(docs: list[dict], path: str) -> None:
    gateway = container(docs, "Deployment", "gateway")
    gateway["volumeMounts"] = [m for m in gateway["volumeMounts"] if m["mountPath"] != path]


def as_empty_dir(volume: dict) -> None:
    for source in ("configMap", "secret"):
        volume.pop(source, None)
    volume["emptyDir"] = {}


TEMPLATE_MOUNT = "/etc/nginx/templates/federation.conf.template"
CA_MOUNT = "/etc/nginx/efgs-callback-ca"


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: env_var(d, "gateway", "GATEWAY_STATUS_PORT").update(value=""), "no value for GATEWAY_STATUS_PORT"),
    (lambda d: drop_mount(d, TEMPLATE_MOUNT),
     "federation.conf.template is not mounted at /etc/nginx/templates/federation.conf.template"),
    (lambda d: mounts(d)[TEMPLATE_MOUNT].update(subPath="gateway.conf.template"),
     "federation.conf.template is not mounted at"),
    (lambda d: as_empty_dir(volumes(d)[mounts(d)[TEMPLATE_MOUNT]["name"]]),
     "federation.conf.template is not mounted at"),
    (lambda d: env_var(d, "gateway", "GATEWAY_EFGS_CA").update(value="/etc/nginx/efgs-ca/ca.crt"),
     "GATEWAY_EFGS_CA=/etc/nginx/efgs-ca/ca.crt is not a file of a mounted Secret"),
    (lambda d: drop_mount(d, CA_MOUNT), "is not a file of a mounted Secret"),
    (lambda d: as_empty_dir(volumes(d)[mounts(d)[CA_MOUNT]["name"]]), "is not a file of a mounted Secret"),
], ids=["gateway-env", "no-template", "template-subpath", "template-not-configmap", "ca-path", "no-ca",
        "ca-not-secret"])
def test_federation_gateway_mounts(federation, mutate, fragment):
    assert not fires(k8s_federation_gateway_problems(federation, FEDERATION_PLACEHOLDERS, {}), fragment)
    mutate(federation)
    assert fires(k8s_federation_gateway_problems(federation, FEDERATION_PLACEHOLDERS, {}), fragment)


def service_port(docs: list[dict], service: str, name: str) -> dict:
    return next(p for p in named(docs, "Service", service)["spec"]["ports"] if p["name"] == name)


def container_port(docs: list[dict], name: str) -> dict:
    return next(p for p in container(docs, "Deployment", "gateway")["ports"] if p["name"] == name)


def plain_secret(entry: dict) -> None:
    del entry["valueFrom"]
    entry["value"] = "x" * 48


def secret_ref(docs: list[dict], deployment: str) -> dict:
    return env_var(docs, deployment, "GATEWAY_SECRET")["valueFrom"]["secretKeyRef"]


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: service_port(d, "gateway", "federation").update(port=9446),
     "the gateway Service does not pass GATEWAY_FEDERATION_PORT=8446 to that containerPort"),
    (lambda d: container_port(d, "federation").update(containerPort=8447),
     "the gateway Service does not pass GATEWAY_FEDERATION_PORT=8446"),
    (lambda d: env_var(d, "gateway", "GATEWAY_FEDERATION_PORT").update(value="8447"),
     "the gateway Service does not pass GATEWAY_FEDERATION_PORT=8447"),
    (lambda d: env_var(d, "gateway", "GATEWAY_FEDERATION_UPSTREAM").update(value="federation-callback:8007"),
     "GATEWAY_FEDERATION_UPSTREAM=federation-callback:8007 is not a port of the Service federation-callback"),
    (lambda d: env_var(d, "gateway", "GATEWAY_FEDERATION_UPSTREAM").update(value="federation-service:8006"),
     "GATEWAY_FEDERATION_UPSTREAM=federation-service:8006 is not a port of the Service federation-callback"),
    (lambda d: d.remove(named(d, "Service", "federation-callback")),
     "GATEWAY_FEDERATION_UPSTREAM=federation-callback:8006 is not a port of the Service federation-callback"),
    (lambda d: secret_ref(d, "federation-callback").update(key="OTHER_SECRET"),
     "the gateway and federation-callback do not read GATEWAY_SECRET from one Secret key"),
    (lambda d: secret_ref(d, "federation-callback").update(name="other-secret"),
     "the gateway and federation-callback do not read GATEWAY_SECRET from one Secret key"),
    (lambda d: plain_secret(env_var(d, "gateway", "GATEWAY_SECRET")),
     "the gateway and federation-callback do not read GATEWAY_SECRET from one Secret key"),
], ids=["service-port", "container-port", "port-setting", "upstream-port", "upstream-host", "no-callback-service",
        "secret-key", "secret-name", "plain-secret"])
def test_federation_gateway_wiring(federation, mutate, fragment):
    assert not fires(k8s_federation_gateway_problems(federation, FEDERATION_PLACEHOLDERS, {}), fragment)
    mutate(federation)
    assert fires(k8s_federation_gateway_problems(federation, FEDERATION_PLACEHOLDERS, {}), fragment)
