"""deploy/postgres/init.sh on a throw-away PostgreSQL 15 cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .common import CheckFailed, Context


def check_postgres(ctx: Context) -> str:
    pg_bin = Path(os.environ.get("EN_PG_BIN", "/usr/lib/postgresql/15/bin"))
    if not (pg_bin / "initdb").exists():
        raise CheckFailed(f"no PostgreSQL 15 binaries in {pg_bin}")
    cluster = Path(tempfile.mkdtemp(prefix="deploy-check-pg-", dir="/tmp"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(cluster, "postgres", "postgres")
    env = {"PATH": f"{pg_bin}:/usr/bin:/bin", "PGHOST": str(cluster), "PGPORT": "54999"}
    dev_env = dict(line.split("=", 1) for line in (ctx.dev / ".env").read_text().splitlines()
                   if "=" in line and not line.startswith("#"))
    passwords = {k: v for k, v in dev_env.items() if k.endswith("_DB_PASSWORD")}
    # The optional roles (data donation's here) exist without a login until a run gets their password.
    without_datadonation = {k: v for k, v in passwords.items() if k != "DATADONATION_DB_PASSWORD"}

    def sh(cmd: list[str], extra: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(as_user + ["env", *[f"{k}={v}" for k, v in {**env, **(extra or {})}.items()], *cmd],
                                capture_output=True, text=True, cwd="/", timeout=60)
        if check and result.returncode != 0:
            raise CheckFailed(f"{' '.join(cmd[:2])} failed", (result.stdout + result.stderr).strip().splitlines()[-8:])
        return result

    try:
        sh(["initdb", "-D", f"{cluster}/data", "-U", "postgres", "--auth=trust", "--no-sync", "--no-instructions"])
        # The superuser (init.sh's own connection) by trust, every service role only with its password: so the
        # checks below also prove that init.sh set the passwords the services will use.
        sh(["sh", "-c", f"printf 'local all postgres trust\\nlocal all all scram-sha-256\\n' > {cluster}/data/pg_hba.conf"])
        sh(["pg_ctl", "start", "-w", "-D", f"{cluster}/data", "-l", f"{cluster}/log",
            "-o", f"-p 54999 -k {cluster} -c listen_addresses=''"])
        # A copy in the cluster's folder: run as postgres, the script must be readable by that user, which a clone
        # under a private home (/root, mode 700) is not.
        init = str(cluster / "init.sh")
        shutil.copyfile(ctx.deploy / "postgres" / "init.sh", init)
        os.chmod(init, 0o755)
        psql = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]

        def as_role(role: str, db: str, sql: str, password: str | None = None) -> subprocess.CompletedProcess:
            secret = password if password is not None else passwords.get(f"{role.upper()}_DB_PASSWORD", "")
            return sh(psql + ["-U", role, "-d", db, "-c", sql], {"PGPASSWORD": secret}, check=False)

        problems = []
        sh([init], without_datadonation)
        if as_role("datadonation", "datadonation", "SELECT 1").returncode == 0:
            problems.append("datadonation may log in without a password being configured")
        sh([init], passwords)   # a later run with the optional password gives the role its login
        sh([init], passwords)   # idempotent: a second run (password rotation) succeeds

        owners = sh(psql + ["-U", "postgres", "-c",
                            "SELECT string_agg(datname || '=' || pg_get_userbyid(datdba), ',' ORDER BY datname) "
                            "FROM pg_database WHERE datname NOT LIKE 'template%' AND datname <> 'postgres'"]).stdout.strip()
        expected = ("datadonation=datadonation,efgs=efgs,keys=submission,portal=portal,testresult=testresult,"
                    "verification=verification")
        if owners != expected:
            problems.append(f"databases and owners are {owners}, expected {expected}")
        if as_role("submission", "keys", "CREATE TABLE later_table (x int); INSERT INTO later_table VALUES (1)").returncode != 0:
            problems.append("submission cannot log in with SUBMISSION_DB_PASSWORD and create a table in keys")
        if as_role("submission", "keys", "SELECT 1", password="not-the-password").returncode == 0:
            problems.append("submission logs in with a wrong password")
        if as_role("distribution", "keys", "DELETE FROM later_table RETURNING x").returncode != 0:
            problems.append("distribution cannot read and delete a table submission creates later")
        if as_role("distribution", "keys", "INSERT INTO later_table VALUES (2)").returncode == 0:
            problems.append("distribution may insert into the keys tables")
        if as_role("federation", "keys", "INSERT INTO later_table VALUES (3); UPDATE later_table SET x = 4; "
                   "DELETE FROM later_table WHERE x = 4 RETURNING x").returncode != 0:
            problems.append("federation cannot insert, update and delete in a table submission creates later")
        if as_role("federation", "verification", "SELECT 1").returncode == 0:
            problems.append("federation may connect to verification")
        for role, db in (("verification", "verification"), ("testresult", "testresult"), ("portal", "portal")):
            if as_role(role, db, "SELECT 1").returncode != 0:
                problems.append(f"{role} cannot log in to {db} with its password")
        for role, db in (("distribution", "verification"), ("verification", "keys"), ("portal", "testresult"),
                         ("testresult", "portal"), ("submission", "verification")):
            if as_role(role, db, "SELECT 1").returncode == 0:
                problems.append(f"{role} may connect to {db}")
        if as_role("efgs", "efgs", "CREATE TABLE rehearsal (x int)").returncode != 0:
            problems.append("efgs cannot log in to efgs with EFGS_DB_PASSWORD and create a table")
        if as_role("efgs", "keys", "SELECT 1").returncode == 0:
            problems.append("efgs may connect to keys")
        if as_role("datadonation", "datadonation", "CREATE TABLE donations (x int)").returncode != 0:
            problems.append("datadonation cannot log in to datadonation with DATADONATION_DB_PASSWORD and create a table")
        for db in ("keys", "verification", "portal"):
            if as_role("datadonation", db, "SELECT 1").returncode == 0:
                problems.append(f"datadonation may connect to {db}")
        if as_role("submission", "datadonation", "SELECT 1").returncode == 0:
            problems.append("submission may connect to datadonation")
        # The analysts' group role: no login of its own, CONNECT on datadonation only; a member's login (what an
        # operator creates per analyst) opens datadonation and reads what the migration grants, nothing else.
        analyst = sh(psql + ["-U", "postgres", "-c",
                             "SELECT rolcanlogin, has_database_privilege('datadonation_analyst', 'datadonation', 'CONNECT'), "
                             "has_database_privilege('datadonation_analyst', 'keys', 'CONNECT') "
                             "FROM pg_roles WHERE rolname = 'datadonation_analyst'"]).stdout.strip()
        if analyst != "f|t|f":
            problems.append(f"datadonation_analyst (login, CONNECT datadonation, CONNECT keys) is {analyst or 'missing'}, "
                            "expected a role without login that may connect to datadonation only")
        sh(psql + ["-U", "postgres", "-c", "CREATE ROLE alice LOGIN PASSWORD 'alice-password-123' IN ROLE datadonation_analyst"])
        sh(psql + ["-U", "datadonation", "-d", "datadonation", "-c", "GRANT SELECT ON donations TO datadonation_analyst"],
           {"PGPASSWORD": passwords.get("DATADONATION_DB_PASSWORD", "")})
        if as_role("alice", "datadonation", "SELECT count(*) FROM donations", password="alice-password-123").returncode != 0:
            problems.append("a member of datadonation_analyst cannot read a table granted to the role")
        if as_role("alice", "datadonation", "INSERT INTO donations VALUES (1)", password="alice-password-123").returncode == 0:
            problems.append("a member of datadonation_analyst may write")
        if as_role("alice", "keys", "SELECT 1", password="alice-password-123").returncode == 0:
            problems.append("a member of datadonation_analyst may connect to keys")
    finally:
        subprocess.run(as_user + [str(pg_bin / "pg_ctl"), "stop", "-D", f"{cluster}/data", "-m", "immediate"],
                       capture_output=True, cwd="/")
        shutil.rmtree(cluster, ignore_errors=True)
    if problems:
        raise CheckFailed("deploy/postgres/init.sh", problems)
    return ("deploy/postgres/init.sh creates the six databases and roles on a throw-away PostgreSQL 15 (three times); "
            "each service role logs in with its password and no other, an optional one only once it is given; "
            "distribution reads and deletes later tables of keys, federation also inserts and updates; the rehearsal "
            "gateway owns efgs; no role opens another's database; datadonation_analyst has no login, its members read "
            "datadonation only")

# The metrics prometheus-nginx-exporter makes of nginx's stub_status (the gateway's scrape job).
