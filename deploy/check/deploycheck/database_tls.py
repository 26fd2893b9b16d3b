"""TLS to the database: verify-full with the CA bundle, checked live against a throw-away TLS PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

from .common import CheckFailed, Context, OVERLAYS, k8s_by_kind, our_binary, pod_specs
from .configurations import compose_mounts, remapped_settings


BUNDLE_PATH = "/etc/ssl/certs/ca-certificates.crt"   # the one CA file the services' TLS (swift-nio-ssl) reads


def check_database_tls(ctx: Context) -> str:
    """Every connection to PostgreSQL in compose and the Kubernetes manifests is `sslmode=verify-full` with the CA
    bundle mounted where the binaries read it, the in-deployment databases serve TLS, and (as root) a binary with
    compose's configuration really connects over verified TLS, and is refused without the database's CA."""
    problems = []
    config = ctx.compose_config()
    services = config["services"]
    secret_files = {name: Path(spec["file"]).name for name, spec in config.get("secrets", {}).items()}
    hosts = set()
    connecting = 0
    for name, svc in sorted(services.items()):
        url = str(svc.get("environment", {}).get("DATABASE_URL", ""))
        if not our_binary(str(svc.get("image", ""))) or not url:
            continue
        connecting += 1
        parsed = urllib.parse.urlsplit(url)
        hosts.add(parsed.hostname)
        if urllib.parse.parse_qs(parsed.query).get("sslmode") != ["verify-full"]:
            problems.append(f"compose {name}: DATABASE_URL is not sslmode=verify-full")
        if not any(v.split(":")[1:2] == [BUNDLE_PATH] and v.split(":")[0].endswith("/database-ca-bundle.pem")
                   for v in svc.get("volumes", [])):
            problems.append(f"compose {name}: database-ca-bundle.pem is not mounted at {BUNDLE_PATH}")
    postgres = services.get("postgres", {})
    command = " ".join(postgres.get("command") or [])
    if "ssl=on" not in command or "ssl_cert_file" not in command or "ssl_key_file" not in command:
        problems.append("compose postgres: not started with ssl=on and its certificate and key")
    if {"postgres-tls-cert", "postgres-tls-key"} - {s if isinstance(s, str) else s["source"] for s in postgres.get("secrets", [])}:
        problems.append("compose postgres: the secrets postgres-tls-cert and postgres-tls-key are not mounted")
    # Kubernetes: every container of our images that gets a DATABASE_URL (a *-secrets Secret) mounts the bundle.
    secrets = ctx.dev_secrets()
    for target in ("base", *OVERLAYS):
        docs = ctx.kustomize(target)
        for kind_name, spec in pod_specs(docs):
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                refs = [e["secretRef"]["name"] for e in c.get("envFrom", []) if "secretRef" in e]
                if not our_binary(c.get("image", "")) or not any(r.endswith("-secrets") for r in refs):
                    continue
                connecting += 1
                mount = next((m for m in c.get("volumeMounts", []) if m["mountPath"] == BUNDLE_PATH), None)
                secret = volumes.get((mount or {}).get("name"), {}).get("secret", {})
                if not mount or mount.get("subPath") != "ca-certificates.crt" or secret.get("secretName") != "database-ca-bundle":
                    problems.append(f"{target} {kind_name} {c['name']}: the Secret database-ca-bundle is not mounted "
                                    f"at {BUNDLE_PATH}")
                if target == "overlays/local":
                    for ref in refs:
                        url = secrets.get(ref, {}).get("DATABASE_URL", b"").decode()
                        if url:
                            parsed = urllib.parse.urlsplit(url)
                            hosts.add(parsed.hostname)
                            if urllib.parse.parse_qs(parsed.query).get("sslmode") != ["verify-full"]:
                                problems.append(f"dev-secrets.sh: {ref} DATABASE_URL is not sslmode=verify-full")
        for name, sts in k8s_by_kind(docs, "StatefulSet").items():
            if name == "postgres":
                args = " ".join(sts["spec"]["template"]["spec"]["containers"][0].get("args", []))
                if "ssl=on" not in args:
                    problems.append(f"{target} StatefulSet/postgres: not started with ssl=on")
    # The development certificate of the database verifies, with the development bundle, for every host name used.
    bundle = ctx.dev / "secrets" / "database-ca-bundle.pem"
    for host in sorted(h for h in hosts if h):
        result = ctx.run(["openssl", "verify", "-CAfile", str(bundle), "-verify_hostname", host,
                          str(ctx.dev / "secrets" / "postgres.pem")])
        if result.returncode != 0:
            problems.append(f"dev-secrets.sh: postgres.pem does not verify for {host} with database-ca-bundle.pem: "
                            + " ".join((result.stdout + result.stderr).split())[:200])
    if problems:
        raise CheckFailed("TLS to the database", problems)
    live = database_tls_live(ctx, services, secret_files)
    return (f"all {connecting} containers that connect to PostgreSQL (compose, base, overlays) use sslmode=verify-full "
            f"with the CA bundle mounted at {BUNDLE_PATH}; the databases of compose and the local overlay serve TLS; "
            + live)


def database_tls_live(ctx: Context, services: dict, secret_files: dict[str, str]) -> str:
    """compose's migrate-test-result configuration against a throw-away PostgreSQL 15 that serves the development
    certificate, in a private mount namespace where `postgres` is 127.0.0.1 and the bundle is mounted as in compose:
    it must migrate; with the machine's own CA bundle (the image's, without the database's CA) it must be refused."""
    pg_bin = Path(os.environ.get("EN_PG_BIN", "/usr/lib/postgresql/15/bin"))
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare or not (pg_bin / "initdb").exists():
        return "the live TLS connection was not tried (it needs root, unshare and PostgreSQL 15)"
    svc = services["migrate-test-result"]
    env = {k: str(v) for k, v in svc.get("environment", {}).items()}
    mounts = compose_mounts(ctx, svc, secret_files)
    url = urllib.parse.urlsplit(env["DATABASE_URL"])
    port = 54997
    cluster = Path(tempfile.mkdtemp(prefix="deploy-check-tls-", dir="/tmp"))
    shutil.chown(cluster, "postgres", "postgres")
    as_postgres = ["runuser", "-u", "postgres", "--"]

    def sh(cmd: list[str]) -> subprocess.CompletedProcess:
        result = subprocess.run(as_postgres + cmd, capture_output=True, text=True, cwd="/", timeout=60)
        if result.returncode != 0:
            raise CheckFailed(f"{' '.join(cmd[:2])} failed", (result.stdout + result.stderr).strip().splitlines()[-8:])
        return result

    try:
        for name, mode in (("postgres.pem", 0o644), ("postgres.key", 0o600)):
            shutil.copyfile(ctx.dev / "secrets" / name, cluster / name)
            shutil.chown(cluster / name, "postgres", "postgres")
            os.chmod(cluster / name, mode)
        sh([str(pg_bin / "initdb"), "-D", f"{cluster}/data", "-U", "postgres", "--auth=trust", "--no-sync",
            "--no-instructions"])
        # The same server settings as compose's postgres command.
        sh([str(pg_bin / "pg_ctl"), "start", "-w", "-D", f"{cluster}/data", "-l", f"{cluster}/log", "-o",
            f"-p {port} -k {cluster} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_min_protocol_version=TLSv1.2 "
            f"-c ssl_cert_file={cluster}/postgres.pem -c ssl_key_file={cluster}/postgres.key"])
        psql = [str(pg_bin / "psql"), "-X", "-q", "-h", str(cluster), "-p", str(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1"]
        sh(psql + ["-c", f"CREATE ROLE {url.username} LOGIN PASSWORD '{url.password}'"])
        sh(psql + ["-c", f"CREATE DATABASE {url.path.strip('/')} OWNER {url.username}"])
        hosts = cluster / "hosts"
        hosts.write_text(Path("/etc/hosts").read_text() + f"\n127.0.0.1 {url.hostname}\n")

        def migrate(bundle: str) -> subprocess.CompletedProcess:
            run_env = {"PATH": "/usr/bin:/bin", **remapped_settings(env, mounts)}
            run_env["DATABASE_URL"] = urllib.parse.urlunsplit(url._replace(netloc=f"{url.username}:{url.password}@{url.hostname}:{port}"))
            run_env["MIGRATE_ONLY"] = "true"
            script = f'mount --bind "$1" {BUNDLE_PATH} && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"'
            return ctx.run([unshare, "--mount", "--propagation", "private", "sh", "-c", script, "--", bundle,
                            str(hosts), str(ctx.binary("test-result-service")), *(svc.get("command") or [])],
                           env=run_env, timeout=60, cwd=str(ctx.work))

        verified = migrate(mounts[BUNDLE_PATH])
        out = " ".join((verified.stdout + verified.stderr).split())
        if verified.returncode != 0 or "Migrations complete" not in out:
            raise CheckFailed("TLS to the database", [f"compose migrate-test-result over verify-full with "
                                                      f"database-ca-bundle.pem exited {verified.returncode}: {out[-300:]}"])
        refused = migrate(BUNDLE_PATH)   # the machine's own bundle: the public CAs only, as in the image
        out = " ".join((refused.stdout + refused.stderr).split())
        if refused.returncode == 0:
            raise CheckFailed("TLS to the database", ["verify-full connected without the database's CA: the server's "
                                                      "certificate is not being checked"])
    finally:
        subprocess.run(as_postgres + [str(pg_bin / "pg_ctl"), "stop", "-D", f"{cluster}/data", "-m", "immediate"],
                       capture_output=True, cwd="/")
        shutil.rmtree(cluster, ignore_errors=True)
    return ("test-result-service --migrate-only with compose's configuration migrates a throw-away PostgreSQL 15 over "
            "verified TLS with the bundle, and is refused with the image's bundle alone")
