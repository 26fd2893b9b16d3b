"""deploy/gateway: placeholders, per-client and global limits, no client address anywhere it could leak, `nginx -t`."""

from __future__ import annotations

import os
import re
import shutil

from .common import (ADDRESS_VARIABLES, CheckFailed, Context, ENVSH_MOUNT, FEDERATION_OVERLAYS, GENERATED_PLACEHOLDERS,
                     PLACEHOLDER, k8s_by_kind, k8s_container_env)


def check_gateway(ctx: Context) -> str:
    template = (ctx.deploy / "gateway" / "gateway.conf.template").read_text()
    placeholders = set(PLACEHOLDER.findall(template))
    # The federation gateway's callback server, a second template where a deployment mounts it.
    federation_placeholders = set(PLACEHOLDER.findall((ctx.deploy / "gateway" / "federation.conf.template").read_text()))
    # The monitoring component's stub_status server (its overlays: the production example).
    status_placeholders = set(PLACEHOLDER.findall((ctx.deploy / "gateway" / "status.conf.template").read_text()))
    problems = []
    services = ctx.compose_config()["services"]
    gateway = services.get("gateway", {})
    compose_env = {k: str(v) for k, v in gateway.get("environment", {}).items()}
    volumes = " ".join(gateway.get("volumes", []))
    compose_federation = "federation.conf.template:/etc/nginx/templates/federation.conf.template" in volumes
    compose_placeholders = placeholders | (federation_placeholders if compose_federation else set())
    problems += [f"compose: {p}" for p in gateway_env_problems(compose_env, compose_placeholders)]
    if "gateway.conf.template:/etc/nginx/templates/gateway.conf.template" not in volumes:
        problems.append("compose: the template is not mounted at /etc/nginx/templates/gateway.conf.template")
    if "nginx.container.conf:/etc/nginx/nginx.conf" not in volumes:
        problems.append("compose: nginx.container.conf is not mounted over /etc/nginx/nginx.conf")
    if f"client-key.js:{compose_env.get('GATEWAY_CLIENT_KEY_JS')}:ro" not in volumes:
        problems.append("compose: client-key.js is not mounted at GATEWAY_CLIENT_KEY_JS")
    if f"signed-files.js:{compose_env.get('GATEWAY_SIGNED_FILES_JS')}:ro" not in volumes:
        problems.append("compose: signed-files.js is not mounted at GATEWAY_SIGNED_FILES_JS")
    if not any(v.split(":")[0].endswith("/client-key.envsh") and ENVSH_MOUNT.match(v.split(":")[1])
               for v in gateway.get("volumes", [])):
        problems.append("compose: client-key.envsh is not mounted as /docker-entrypoint.d/NN-….envsh (before the "
                        "template is rendered), so no per-start key for the per-client limits")
    if not any(str(t).split(":")[0] == "/etc/nginx/conf.d" for t in gateway.get("tmpfs", [])):
        problems.append("compose: /etc/nginx/conf.d (the rendered configuration with its keys) is not a tmpfs")
    if compose_env.get("GATEWAY_SECRET") != str(services.get("test-result-service", {}).get("environment", {}).get("GATEWAY_SECRET")):
        problems.append("compose: the gateway and test-result-service do not get the same GATEWAY_SECRET")
    for key in ("VERIFICATION", "SUBMISSION", "TESTRESULT", "PORTAL", "DATADONATION"):
        upstream = compose_env.get(f"GATEWAY_{key}_UPSTREAM", ":")
        host, _, port = upstream.rpartition(":")
        target = services.get(host)
        if not target or str(target.get("environment", {}).get("HTTP_PORT")) != port:
            problems.append(f"compose: GATEWAY_{key}_UPSTREAM={upstream} is not a service's HTTP_PORT")
        elif not set(gateway.get("networks", {})) & set(target.get("networks", {})):
            problems.append(f"compose: the gateway shares no network with {host}")
    if compose_federation:
        upstream = compose_env.get("GATEWAY_FEDERATION_UPSTREAM", ":")
        host, _, port = upstream.rpartition(":")
        target = services.get(host, {})
        if host != "federation-service" or str(target.get("environment", {}).get("HTTP_PORT")) != port:
            problems.append(f"compose: GATEWAY_FEDERATION_UPSTREAM={upstream} is not federation-service's HTTP_PORT")
        elif not set(gateway.get("networks", {})) & set(target.get("networks", {})):
            problems.append("compose: the gateway shares no network with federation-service")
        if compose_env.get("GATEWAY_SECRET") != str(target.get("environment", {}).get("GATEWAY_SECRET")):
            problems.append("compose: the gateway and federation-service do not get the same GATEWAY_SECRET")
        if f"{compose_env.get('GATEWAY_FEDERATION_PORT')}:{compose_env.get('GATEWAY_FEDERATION_PORT')}" not in [
                str(p) for p in gateway.get("ports", [])] and not any(
                str(p.get("target")) == compose_env.get("GATEWAY_FEDERATION_PORT") for p in gateway.get("ports", [])
                if isinstance(p, dict)):
            problems.append("compose: the callback server's port GATEWAY_FEDERATION_PORT is not published")
    cdn_mount = [v for v in gateway.get("volumes", []) if v.endswith(f":{compose_env.get('GATEWAY_CDN_ROOT')}:ro")]
    dist = services.get("distribution-service", {})
    dist_dir = dist.get("environment", {}).get("CDN_DIRECTORY")
    if not cdn_mount or not any(v.startswith(cdn_mount[0].split(":")[0] + ":") and v.split(":")[1] == dist_dir
                                for v in dist.get("volumes", [])):
        problems.append("compose: the gateway does not serve the volume distribution writes (CDN_DIRECTORY)")

    docs = ctx.kustomize("base")
    deployment = k8s_by_kind(docs, "Deployment").get("gateway")
    k8s_env: dict[str, str] = {}
    if deployment is None:
        problems.append("k8s: no gateway Deployment")
    else:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        k8s_env = k8s_container_env(container)
        problems += [f"k8s: {p}" for p in gateway_env_problems(k8s_env, placeholders)]
        mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
        if mounts.get("/etc/nginx/templates/gateway.conf.template", {}).get("subPath") != "gateway.conf.template":
            problems.append("k8s: the template is not mounted at /etc/nginx/templates/gateway.conf.template")
        if mounts.get("/etc/nginx/nginx.conf", {}).get("subPath") != "nginx.conf":
            problems.append("k8s: nginx.container.conf is not mounted over /etc/nginx/nginx.conf")
        if "/etc/nginx/conf.d" not in mounts:
            problems.append("k8s: /etc/nginx/conf.d (the rendered configuration) is not a writable volume")
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
        if volumes.get(mounts.get("/etc/nginx/conf.d", {}).get("name"), {}).get("emptyDir", {}).get("medium") != "Memory":
            problems.append("k8s: /etc/nginx/conf.d (the rendered configuration with its keys) is not a memory-backed emptyDir")
        if mounts.get(k8s_env.get("GATEWAY_CLIENT_KEY_JS", ""), {}).get("subPath") != "client-key.js":
            problems.append("k8s: client-key.js is not mounted at GATEWAY_CLIENT_KEY_JS")
        if mounts.get(k8s_env.get("GATEWAY_SIGNED_FILES_JS", ""), {}).get("subPath") != "signed-files.js":
            problems.append("k8s: signed-files.js is not mounted at GATEWAY_SIGNED_FILES_JS")
        envsh = [m for path, m in mounts.items() if ENVSH_MOUNT.match(path) and m.get("subPath") == "client-key.envsh"]
        if not envsh:
            problems.append("k8s: client-key.envsh is not mounted as /docker-entrypoint.d/NN-….envsh")
        elif not volumes.get(envsh[0]["name"], {}).get("configMap", {}).get("defaultMode", 0o644) & 0o111:
            problems.append("k8s: client-key.envsh is not executable (the entrypoint ignores it then): set defaultMode")
        service = k8s_by_kind(docs, "Service").get("gateway", {})
        if service.get("spec", {}).get("externalTrafficPolicy") != "Local":
            problems.append("k8s: the gateway Service's externalTrafficPolicy is not Local: nginx would see node "
                            "addresses, and every client behind a node would share one per-client budget")
        tr = k8s_by_kind(docs, "Deployment").get("test-result-service", {})
        tr_env = {e["name"]: e for c in tr.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
                  for e in c.get("env", [])}
        tr_ref = tr_env.get("GATEWAY_SECRET", {}).get("valueFrom", {}).get("secretKeyRef", {})
        if k8s_env.get("GATEWAY_SECRET") != f"<secret {tr_ref.get('name')}/{tr_ref.get('key')}>":
            problems.append("k8s: the gateway and test-result-service do not read GATEWAY_SECRET from one Secret key")
        k8s_services = k8s_by_kind(docs, "Service")
        for key in ("VERIFICATION", "SUBMISSION", "TESTRESULT", "PORTAL", "DATADONATION"):
            upstream = k8s_env.get(f"GATEWAY_{key}_UPSTREAM", ":")
            host, _, port = upstream.rpartition(":")
            svc = k8s_services.get(host)
            if not svc or int(port or 0) not in [p["port"] for p in svc["spec"]["ports"]]:
                problems.append(f"k8s: GATEWAY_{key}_UPSTREAM={upstream} is not a Service port")
    # The federation component's gateway (its overlays): the fourth server's template and CA mounted, its port on the
    # Service, the callback's Service as upstream, one GATEWAY_SECRET for both.
    federation_envs: list[tuple[str, dict[str, str]]] = []
    for target in FEDERATION_OVERLAYS:
        federation_env: dict[str, str] = {}
        problems += [f"k8s {target}: {p}" for p in k8s_federation_gateway_problems(
            ctx.kustomize(target), placeholders | federation_placeholders | status_placeholders, federation_env)]
        federation_envs.append((f"k8s-{target.rpartition('/')[2]}", federation_env))

    # What the template promises about addresses and limits, and the budgets each deployment sets.
    problems += gateway_template_problems(template)
    deployments = (("compose", compose_env), ("k8s", k8s_env), *federation_envs)
    for label, env in deployments:
        if env:
            problems += [f"{label}: {p}" for p in gateway_rate_problems(env)]
    # Render the template as each deployment does and load it with nginx -t, inside nginx.container.conf.
    for label, env in deployments:
        if env:
            problems += [f"{label}: {p}" for p in nginx_test(ctx, label, env)]
    if problems:
        raise CheckFailed("gateway configuration", problems)
    return (f"all {len(compose_placeholders)} ${{GATEWAY_*}} placeholders get values in compose and Kubernetes (the per-client "
            f"key at every start); every proxied route has a per-client and a global limit, registrations their own; "
            f"no address or per-client key in a log format or header; the renders (compose, Kubernetes, Kubernetes "
            f"with the federation component) pass nginx -t inside "
            f"nginx.container.conf")


def k8s_federation_gateway_problems(docs: list[dict], placeholders: set[str], env: dict[str, str]) -> list[str]:
    """The gateway of a render with the federation component; fills `env` with the gateway container's settings."""
    deployments = k8s_by_kind(docs, "Deployment")
    services = k8s_by_kind(docs, "Service")
    deployment = deployments.get("gateway")
    if deployment is None:
        return ["no gateway Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env.update(k8s_container_env(container))
    problems = gateway_env_problems(env, placeholders)
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    template = mounts.get("/etc/nginx/templates/federation.conf.template", {})
    if template.get("subPath") != "federation.conf.template" or "configMap" not in volumes.get(template.get("name"), {}):
        problems.append("federation.conf.template is not mounted at /etc/nginx/templates/federation.conf.template")
    ca = env.get("GATEWAY_EFGS_CA", "")
    if not any(ca.startswith(path + "/") and "secret" in volumes.get(m["name"], {}) for path, m in mounts.items()):
        problems.append(f"GATEWAY_EFGS_CA={ca} is not a file of a mounted Secret")
    port = env.get("GATEWAY_FEDERATION_PORT", "")
    container_ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    service_ports = services.get("gateway", {}).get("spec", {}).get("ports", [])
    if not any(str(p["port"]) == port and str(container_ports.get(p.get("targetPort"), p.get("targetPort"))) == port
               for p in service_ports):
        problems.append(f"the gateway Service does not pass GATEWAY_FEDERATION_PORT={port} to that containerPort")
    upstream = env.get("GATEWAY_FEDERATION_UPSTREAM", ":")
    host, _, upstream_port = upstream.rpartition(":")
    svc = services.get(host)
    ports = [str(p["port"]) for p in (svc or {}).get("spec", {}).get("ports", [])]
    if host != "federation-callback" or upstream_port not in ports:
        problems.append(f"GATEWAY_FEDERATION_UPSTREAM={upstream} is not a port of the Service federation-callback")
    callback = deployments.get("federation-callback", {})
    callback_env = {k: v for c in callback.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
                    for k, v in k8s_container_env(c).items()}
    if not env.get("GATEWAY_SECRET", "").startswith("<secret") or env.get("GATEWAY_SECRET") != callback_env.get("GATEWAY_SECRET"):
        problems.append("the gateway and federation-callback do not read GATEWAY_SECRET from one Secret key")
    return problems


def gateway_env_problems(env: dict[str, str], placeholders: set[str]) -> list[str]:
    problems = []
    missing = sorted(p for p in placeholders - GENERATED_PLACEHOLDERS if not env.get(p))
    if missing:
        problems.append(f"no value for {', '.join(missing)}")
    extra = sorted(k for k in env if k.startswith("GATEWAY_") and k not in placeholders)
    if extra:
        problems.append(f"{', '.join(extra)} set but not in the template")
    fixed = sorted(k for k in GENERATED_PLACEHOLDERS if k in env)
    if fixed:
        problems.append(f"{', '.join(fixed)} set: it is made anew at every start (client-key.envsh); a fixed key "
                        "would outlive restarts")
    filt = env.get("NGINX_ENVSUBST_FILTER")
    if not filt or any(not re.search(filt, p) for p in placeholders):
        problems.append("NGINX_ENVSUBST_FILTER does not admit every GATEWAY_* placeholder")
    if env.get("NGINX_ENVSUBST_OUTPUT_DIR", "/etc/nginx/conf.d") != "/etc/nginx/conf.d":
        problems.append("NGINX_ENVSUBST_OUTPUT_DIR is not /etc/nginx/conf.d (where nginx.container.conf includes from)")
    if env.get("GATEWAY_BIND") != "0.0.0.0":
        problems.append("GATEWAY_BIND is not 0.0.0.0")
    return problems


def nginx_blocks(text: str) -> list[dict]:
    """The blocks of an nginx configuration, comments removed: each {"header", "parents", "body"}; parents are the
    enclosing blocks (outermost first), body the block's own directives (not those of nested blocks). The first block
    is the file's top level."""
    top: dict = {"header": "", "parents": [], "body": []}
    blocks, stack, statement, quote = [top], [top], "", ""
    for line in text.splitlines():
        previous = " "
        for char in line:
            if quote:   # a quoted string (a regex may hold braces and semicolons) runs to its closing quote
                statement += char
                if char == quote and previous != "\\":
                    quote = ""
            elif char in "\"'":
                quote = char
                statement += char
            elif char == "#" and previous.isspace():
                break
            elif char == "{":
                block = {"header": " ".join(statement.split()), "parents": stack[1:], "body": []}
                blocks.append(block)
                stack = stack + [block]
                statement = ""
            elif char == "}":
                stack = stack[:-1]
                statement = ""
            elif char == ";":
                stack[-1]["body"].append(" ".join(statement.split()))
                statement = ""
            else:
                statement += char
            previous = char
        statement += "\n"
    return blocks


def gateway_template_problems(template: str) -> list[str]:
    """The template's promises: no address (or per-client key) leaves nginx's memory, every proxied route of the app
    and portal servers has a per-client and a global limit, registrations a tight one of their own."""
    problems = []
    # ${NAME} (a placeholder, or nginx's own spelling of a variable) as $NAME, so its braces are not read as blocks.
    blocks = nginx_blocks(re.sub(r"\$\{(\w+)\}", r"$\1", template))
    statements = [(b, d) for b in blocks for d in b["body"]]
    # Where the address variables may appear: defining the per-client key, and keying a per-client zone.
    zones: dict[str, str] = {}
    for _, d in statements:
        match = re.match(r"limit_req_zone\s+\$(\w+)\s+zone=(\w+):", d)
        if match:
            zones[match.group(2)] = match.group(1)
    for b, d in statements + [(b, b["header"]) for b in blocks]:
        used = set(re.findall(r"\$\{?([a-z_]+)", d)) & ADDRESS_VARIABLES
        if not used:
            continue
        allowed = (re.match(r"limit_req_zone\s+\$gateway_client\s", d) and used == {"gateway_client"}) \
            or (re.match(r"js_set\s+\$gateway_client\s", d) and used == {"gateway_client"}) \
            or (re.match(r"js_var\s+\$gateway_client_key\s", d) and used == {"gateway_client_key"})
        if not allowed:
            problems.append(f"template: `{d[:80]}` uses {', '.join(sorted('$' + u for u in used))}: the "
                            "client's address and the per-client key may key a limit_req_zone only, never a log, "
                            "header or response")
    for b, d in statements:
        if d.startswith("log_format") and "$remote" in d:
            problems.append("template: a log format holds the client's address")
    per_client = {z for z, key in zones.items() if key == "gateway_client"}
    if not per_client:
        problems.append("template: no limit_req_zone is keyed by $gateway_client (per client)")
    global_zones = {z for z, key in zones.items() if key == "server_port"}
    for b in blocks:
        if not b["header"].startswith("location") or not any(d.startswith("proxy_pass") for d in b["body"]):
            continue
        server = next((x for x in b["parents"] if x["header"] == "server"), {"body": []})
        listen = " ".join(d for d in server["body"] if d.startswith("listen"))
        if "GATEWAY_LAB_PORT" in listen or b["header"] == "location = /static/portal.css":
            continue   # labs: one budget per client certificate; the portal's stylesheet: static and cached
        used = set(re.findall(r"limit_req\s+zone=(\w+)", " ".join(b["body"])))
        where = b["header"]
        if not used & per_client:
            problems.append(f"template: {where} has no per-client limit")
        if not used & global_zones:
            problems.append(f"template: {where} has no global ceiling")
        if "registrationToken" in where and "registration" not in used:
            problems.append(f"template: {where} lacks the registration budget (teleTAN guessing)")
        if "circuit-breaker" in where and "/request" in where and "circuit_breaker" not in used:
            problems.append(f"template: {where} lacks the circuit_breaker budget (one client could hold every "
                            "phone's alerts)")
    for zone in ("registration", "circuit_breaker"):
        if zone in zones and zones[zone] != "gateway_client":
            problems.append(f"template: the {zone} zone is not per client")
    return problems


def rate_per_second(rate: str) -> float | None:
    match = re.fullmatch(r"(\d+)r/([sm])", rate)
    if not match:
        return None
    return int(match.group(1)) / (1 if match.group(2) == "s" else 60)


def gateway_rate_problems(env: dict[str, str]) -> list[str]:
    """A deployment's budgets: well-formed, each client's below its ceiling, registrations below the app's."""
    problems = []
    rates = {}
    for key, value in env.items():
        if key.endswith("_RATE") and key.startswith("GATEWAY_"):
            rates[key] = rate_per_second(value)
            if rates[key] is None:
                problems.append(f"{key}={value} is not N r/s or N r/m")
        if key.endswith("_BURST") and key.startswith("GATEWAY_") and not re.fullmatch(r"\d+", value):
            problems.append(f"{key}={value} is not a number")
    def below(small: str, large: str, why: str) -> None:
        a, b = rates.get(small), rates.get(large)
        if a is not None and b is not None and a >= b:
            problems.append(f"{small} ({env[small]}) is not below {large} ({env[large]}): {why}")
    below("GATEWAY_APP_CLIENT_RATE", "GATEWAY_APP_RATE", "one client could spend every phone's budget")
    below("GATEWAY_PORTAL_CLIENT_RATE", "GATEWAY_PORTAL_RATE", "one client could spend every officer's budget")
    below("GATEWAY_REGISTRATION_RATE", "GATEWAY_APP_CLIENT_RATE", "registrations would have no budget of their own")
    # The spike rule of verification's circuit breakers holds every phone's alerts above NHS_CB_SPIKE_MINIMUM (100 by
    # default) approval requests an hour: one client must not reach it alone at one replica (deploy/README.md, "The
    # gateway", says what R replicas need).
    rate, burst = rates.get("GATEWAY_CIRCUIT_BREAKER_RATE"), env.get("GATEWAY_CIRCUIT_BREAKER_BURST", "")
    if rate is not None and burst.isdigit() and rate * 3600 + int(burst) >= CIRCUIT_BREAKER_SPIKE_MINIMUM:
        problems.append(f"GATEWAY_CIRCUIT_BREAKER_RATE ({env['GATEWAY_CIRCUIT_BREAKER_RATE']}) and _BURST ({burst}) "
                        f"let one client send {round(rate * 3600) + int(burst)} approval requests an hour, not below "
                        f"NHS_CB_SPIKE_MINIMUM ({CIRCUIT_BREAKER_SPIKE_MINIMUM}): one client could hold every phone's "
                        "alerts")
    return problems


# verification-service's default NHS_CB_SPIKE_MINIMUM (Services/Verification/Domain/NHSCircuitBreakerSettings.swift).
CIRCUIT_BREAKER_SPIKE_MINIMUM = 100


def nginx_test(ctx: Context, label: str, env: dict[str, str]) -> list[str]:
    work = ctx.work / f"nginx-{label}"
    (work / "cdn").mkdir(parents=True, exist_ok=True)
    secrets = ctx.dev / "secrets"
    values = {k: v for k, v in env.items() if k.startswith("GATEWAY_")}
    values.update({
        "GATEWAY_TLS_CERT": str(secrets / "gateway.pem"),
        "GATEWAY_TLS_KEY": str(secrets / "gateway.key"),
        "GATEWAY_LAB_CA": str(secrets / "lab-ca.pem"),
        "GATEWAY_CDN_ROOT": str(work / "cdn"),
        "GATEWAY_SECRET": "x" * 48 if values.get("GATEWAY_SECRET", "").startswith("<secret") else values.get("GATEWAY_SECRET", ""),
        "GATEWAY_CLIENT_KEY_JS": str(ctx.deploy / "gateway" / "client-key.js"),
        "GATEWAY_SIGNED_FILES_JS": str(ctx.deploy / "gateway" / "signed-files.js"),
        "GATEWAY_EFGS_CA": str(secrets / "federation-callback-ca.pem"),
    })
    # GATEWAY_CLIENT_KEY: render.sh makes one, as client-key.envsh does in the container.
    # Upstream names resolve only inside the deployment: 127.0.0.1 with the same ports.
    for key in [k for k in values if k.endswith("_UPSTREAM")]:
        values[key] = "127.0.0.1:" + values[key].rpartition(":")[2]
    result = ctx.run([str(ctx.deploy / "gateway" / "render.sh")], env={"PATH": os.environ["PATH"], **values})
    if result.returncode != 0:
        return [f"render.sh: {result.stderr.strip()}"]
    (work / "gateway.conf").write_text(result.stdout)
    # The optional servers, where nginx.container.conf's includes find them: with federation the callback server
    # (federation*.conf), with the monitoring component the stub_status server (status*.conf).
    for name, setting in (("federation", "GATEWAY_FEDERATION_PORT"), ("status", "GATEWAY_STATUS_PORT")):
        for stale in work.glob(f"{name}*.conf"):
            stale.unlink()
        if setting not in values:
            continue
        result = ctx.run([str(ctx.deploy / "gateway" / "render.sh"), str(ctx.deploy / "gateway" / f"{name}.conf.template")],
                         env={"PATH": os.environ["PATH"], **values})
        if result.returncode != 0:
            return [f"render.sh {name}.conf.template: {result.stderr.strip()}"]
        (work / f"{name}.conf").write_text(result.stdout)
    main = (ctx.deploy / "gateway" / "nginx.container.conf").read_text()
    if "include /etc/nginx/conf.d/gateway.conf;" not in main:
        return ["nginx.container.conf does not include /etc/nginx/conf.d/gateway.conf"]
    problems = []
    if re.search(r"^\s*(access_log|log_format)\b", main, re.M):
        problems.append("nginx.container.conf defines its own access log or log format")
    if re.search(r"^\s*include\s+/etc/nginx/conf\.d/\*", main, re.M):
        problems.append("nginx.container.conf includes every conf.d file (the image's default.conf too)")
    if not re.search(r"^load_module\s+/usr/lib/nginx/modules/ngx_http_js_module\.so;", main, re.M):
        problems.append("nginx.container.conf does not load njs (the per-client limits' key needs it)")
    if "include /etc/nginx/conf.d/federation*.conf;" not in main:
        problems.append("nginx.container.conf does not include /etc/nginx/conf.d/federation*.conf (the callback server)")
    if "include /etc/nginx/conf.d/status*.conf;" not in main:
        problems.append("nginx.container.conf does not include /etc/nginx/conf.d/status*.conf (the stub_status server)")
    main = main.replace("/tmp/", f"{work}/").replace("/etc/nginx/conf.d/", f"{work}/")
    (work / "nginx.conf").write_text(main)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    result = ctx.run([nginx, "-t", "-q", "-p", str(work), "-c", str(work / "nginx.conf"), "-e", str(work / "error.log")])
    if result.returncode != 0:
        problems.append("nginx -t: " + " ".join((result.stdout + result.stderr).split()))
    return problems
