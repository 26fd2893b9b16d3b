"""Settings: deploy/env/*.env.example, compose and Kubernetes set exactly the keys the binaries read (`--help`)."""

from __future__ import annotations

from .common import (CheckFailed, Context, FEDERATION_OVERLAYS, OVERLAYS, SERVICES, env_example_keys, k8s_by_kind,
                     our_binary, pod_specs)


def check_env_keys(ctx: Context) -> str:
    problems = []
    counted = 0
    for short, binary in SERVICES.items():
        known = ctx.help_keys(binary)
        path = ctx.deploy / "env" / f"{short}.env.example"
        if not path.exists():
            problems.append(f"{path.relative_to(ctx.root)} is missing")
            continue
        _, named = env_example_keys(path)
        missing, unknown = sorted(known - named), sorted(named - known)
        if missing:
            problems.append(f"{path.name} does not name {', '.join(missing)} (read by {binary}; add `# KEY=default`)")
        if unknown:
            problems.append(f"{path.name} names {', '.join(unknown)}, which {binary} does not read")
        counted += len(named)
    # Everything that sets a service's environment elsewhere must use keys the service reads, since unknown
    # variables are ignored silently: compose (env_file + environment) and the Kubernetes workloads.
    for name, svc in ctx.compose_config()["services"].items():
        binary = our_binary(str(svc.get("image", "")))
        if binary:
            unknown = sorted(set(svc.get("environment", {})) - ctx.help_keys(binary) - {"EN_SERVICE"})
            if unknown:
                problems.append(f"compose service {name} sets {', '.join(unknown)}, which {binary} does not read")
    for target in ("base", *OVERLAYS):
        docs = ctx.kustomize(target)
        configmaps = k8s_by_kind(docs, "ConfigMap")
        secrets = ctx.dev_secrets()
        if target in FEDERATION_OVERLAYS and not any(name.startswith("federation-config") for name in configmaps):
            problems.append(f"{target}: no ConfigMap federation-config (the federation component)")
        for kind_name, spec in pod_specs(docs):
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                binary = our_binary(c.get("image", ""))
                if not binary:
                    continue
                keys = {e["name"] for e in c.get("env", [])}
                for source in c.get("envFrom", []):
                    if "configMapRef" in source:
                        cm = configmaps.get(source["configMapRef"]["name"])
                        if cm is None:
                            problems.append(f"{target} {kind_name}: ConfigMap {source['configMapRef']['name']} is not rendered")
                        else:
                            keys |= set(cm.get("data", {}))
                    if "secretRef" in source:
                        keys |= set(secrets.get(source["secretRef"]["name"], {}))
                unknown = sorted(keys - ctx.help_keys(binary))
                if unknown:
                    problems.append(f"{target} {kind_name} container {c['name']} sets {', '.join(unknown)}, "
                                    f"which {binary} does not read")
    if problems:
        raise CheckFailed("configuration keys", problems)
    return (f"deploy/env/*.env.example name exactly the {counted} settings the {len(SERVICES)} binaries read (--help); "
            "compose and Kubernetes (base, both overlays, the federation component's federation-config) set only "
            "known keys")
