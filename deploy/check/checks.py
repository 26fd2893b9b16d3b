"""The checks of `make deploy-check` (run by deploy/check/run.sh inside .data/deploy-venv), one module of
deploycheck/ per artefact.

Each check validates one artefact of deploy/ statically, since no container engine runs here, and prints one line:
`ok     <check>: <what was validated>` or `FAILED <check>: <why>` followed by indented details. The process exits 1
when any check failed. `python checks.py --only NAME ...` runs some of them.
"""

from __future__ import annotations

import argparse
import sys

from deploycheck.common import CheckFailed, Context
from deploycheck.compose import check_compose
from deploycheck.configurations import check_config
from deploycheck.database_tls import check_database_tls
from deploycheck.dockerfile import check_dockerfile
from deploycheck.env_keys import check_env_keys
from deploycheck.gateway import check_gateway
from deploycheck.kubernetes import check_k8s
from deploycheck.observability import check_observability
from deploycheck.postgres_init import check_postgres

CHECKS = [
    ("compose", check_compose),
    ("kubernetes", check_k8s),
    ("dockerfile", check_dockerfile),
    ("env-keys", check_env_keys),
    ("gateway", check_gateway),
    ("config", check_config),
    ("database-tls", check_database_tls),
    ("postgres-init", check_postgres),
    ("observability", check_observability),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--kubectl", required=True)
    parser.add_argument("--k8s-versions", required=True)
    parser.add_argument("--dev-secrets", required=True)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    ctx = Context(args)
    failed = 0
    for name, check in CHECKS:
        if args.only and name not in args.only:
            continue
        try:
            summary = check(ctx)
            print(f"ok     {name}: {summary}", flush=True)
        except CheckFailed as failure:
            failed += 1
            print(f"FAILED {name}: {failure.summary}", flush=True)
            for line in failure.details:
                print(f"         {line}", flush=True)
        except Exception as error:  # a bug in a check is a failure too, never a silent pass
            failed += 1
            print(f"FAILED {name}: {type(error).__name__}: {error}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
