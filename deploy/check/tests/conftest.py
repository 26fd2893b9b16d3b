"""Fixtures of the deploy-check rule tests: the committed manifests, rendered once per session, handed to each test as
a fresh copy it may break.

The renders need what `make deploy-check` installs: docker-compose, and kubectl (the machine's, or the one
deploy/check/run.sh put into .data/deploy-venv). run.sh runs these tests after the checks; by hand:
`.data/deploy-venv/bin/python -m pytest deploy/check/tests`.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "deploy" / "check"))

from deploycheck.common import Context  # noqa: E402


def kubectl() -> str:
    found = os.environ.get("DEPLOY_CHECK_KUBECTL") or shutil.which("kubectl")
    return found or str(Path(sys.executable).parent / "kubectl")


@pytest.fixture(scope="session")
def context(tmp_path_factory) -> Context:
    work = tmp_path_factory.mktemp("deploy-check")
    dev = work / "dev"
    subprocess.run([str(ROOT / "deploy" / "env" / "dev-secrets.sh"), str(dev)], check=True, capture_output=True)
    return Context(argparse.Namespace(root=str(ROOT), work=str(work), bin_dir=str(ROOT / ".build" / "debug"),
                                      kubectl=kubectl(), k8s_versions="1.29.0", dev_secrets=str(dev)))


@pytest.fixture
def compose(context) -> dict:
    """`docker-compose config` of deploy/compose.yaml."""
    return copy.deepcopy(context.compose_config())


@pytest.fixture
def render(context):
    """`render(target)`: the kustomize render of deploy/k8s/<target>."""
    return lambda target: copy.deepcopy(context.kustomize(target))


def named(docs: list[dict], kind: str, name: str) -> dict:
    """The object of a render with this kind and name."""
    found = [d for d in docs if d.get("kind") == kind and d["metadata"]["name"] == name]
    assert found, f"the render has no {kind}/{name}"
    return found[0]


def container(docs: list[dict], kind: str, name: str, index: int = 0) -> dict:
    """A container of a workload of the render."""
    spec = named(docs, kind, name)["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if kind == "CronJob" else spec["template"]
    return template["spec"]["containers"][index]


def fires(problems: list[str], fragment: str) -> bool:
    """Whether one of the problems a rule reported names this fragment."""
    return any(fragment in problem for problem in problems)
