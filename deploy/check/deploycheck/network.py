"""deploy/k8s NetworkPolicies, evaluated as the API server would: who reaches which port, and where each pod's egress
may go."""

from __future__ import annotations

from .common import BINARIES, FEDERATION_CALLBACK_PORT, FEDERATION_EGRESS_PLACEHOLDER, federation_rendered, k8s_by_kind


def pod(name: str, component: str = "server") -> dict:
    """The labels of one of our pods."""
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": "en-backend"}


def matches(selector: dict, labels: dict) -> bool:
    """Whether a label selector selects a pod with these labels."""
    for k, v in selector.get("matchLabels", {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions", []):
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and value not in expr["values"]:
            return False
        if expr["operator"] == "NotIn" and value in expr["values"]:
            return False
        if expr["operator"] == "Exists" and value is None:
            return False
    return True


class Policies:
    """The NetworkPolicies of a render, asked what the API server would answer."""

    def __init__(self, policies: list[dict]):
        self.policies = policies

    def allowed(self, source: dict | None, target: dict, port: int) -> bool:
        """Ingress to target:port from a pod of the namespace with labels `source` (None: outside the cluster)."""
        selecting = [p for p in self.policies if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
                     and matches(p["spec"].get("podSelector", {}), target)]
        for p in selecting:
            for rule in p["spec"].get("ingress", []) or []:
                ports = [x.get("port") for x in rule.get("ports", [])]
                if ports and port not in ports:
                    continue
                peers = rule.get("from")
                if not peers:
                    return True
                for peer in peers:
                    if "ipBlock" in peer and source is None:
                        return True
                    if "podSelector" in peer and "namespaceSelector" not in peer and source is not None \
                            and matches(peer["podSelector"], source):
                        return True
        return False

    def ingress_rules(self, target: dict, port: int):
        """(policy name, rule) of every ingress rule that opens target:port."""
        for p in self.policies:
            if "Ingress" not in p["spec"].get("policyTypes", ["Ingress"]) or not matches(p["spec"].get("podSelector", {}),
                                                                                        target):
                continue
            for rule in p["spec"].get("ingress", []) or []:
                ports = [x.get("port") for x in rule.get("ports", [])]
                if not ports or port in ports:
                    yield p["metadata"]["name"], rule

    def egress_rules(self, source: dict):
        """(policy name, sorted ports, peers) of every egress rule that applies to a pod with labels `source`."""
        for p in self.policies:
            if "Egress" not in p["spec"].get("policyTypes", []) or not matches(p["spec"].get("podSelector", {}), source):
                continue
            for rule in p["spec"].get("egress", []) or []:
                yield p["metadata"]["name"], sorted({x.get("port") for x in rule.get("ports", [])}), rule.get("to") or []

    def reaches(self, source: dict, target: dict, port: int) -> bool:
        """Whether `source`'s egress opens target:port, to a pod of the namespace."""
        return any((not ports or port in ports)
                   and any("podSelector" in peer and "namespaceSelector" not in peer
                           and matches(peer["podSelector"], target) for peer in peers)
                   for _, ports, peers in self.egress_rules(source))


def is_dns(ports: list, peers: list) -> bool:
    """An egress rule to the cluster's DNS on 53 only."""
    return ports == [53] and bool(peers) and all(
        peer.get("podSelector", {}).get("matchLabels", {}).get("k8s-app") == "kube-dns" for peer in peers)


def is_ip_blocks_on_443(ports: list, peers: list) -> bool:
    """An egress rule to addresses outside the cluster (ipBlocks only) on 443 only."""
    return ports == [443] and bool(peers) and all(set(peer) == {"ipBlock"} for peer in peers)


def egress_beyond_cluster(network: Policies, service: str, component: str, allowed: str,
                          peer_problems) -> tuple[bool, set[str]]:
    """The egress rules of `service`'s pods of `component`: DNS and the database (narrowed in every overlay by
    network_rules) pass, each ipBlock of a rule on 443 goes to `peer_problems(policy name, peer)`, any other rule is a
    problem that names what is `allowed`. Returns whether a rule opens 443 to addresses outside the cluster, and the
    problems."""
    problems: set[str] = set()
    opens = False
    for name, ports, peers in network.egress_rules(pod(service, component)):
        if is_dns(ports, peers) or ports == [5432]:
            continue
        if is_ip_blocks_on_443(ports, peers):
            for peer in peers:
                problems |= set(peer_problems(name, peer))
            opens = True
            continue
        problems.add(f"NetworkPolicy {name}: {service} ({component}) may open {ports or 'every port'} to "
                     f"{peers or 'anywhere'}; only {allowed} are allowed")
    return opens, problems


def federation_gateway_block(name: str, peer: dict) -> list[str]:
    """The federation gateway's ipBlock: set by the overlay, /24 or narrower."""
    cidr = peer["ipBlock"].get("cidr", "")
    if cidr == FEDERATION_EGRESS_PLACEHOLDER:
        return [f"NetworkPolicy {name}: the federation gateway's address is the component's placeholder {cidr}: the "
                "overlay sets it"]
    if int(cidr.rpartition("/")[2] or 0) < 24:
        return [f"NetworkPolicy {name}: federation egress to {cidr}, wider than the federation gateway's addresses"]
    return []


def network_rules(docs: list[dict], overlay: bool = False) -> list[str]:
    """Who may reach which port, evaluated from the NetworkPolicies like the API server would (ingress side)."""
    policies = list(k8s_by_kind(docs, "NetworkPolicy").values())
    problems = []
    federation = federation_rendered(docs)
    if not any(p["spec"].get("podSelector") == {} and set(p["spec"].get("policyTypes", [])) >= {"Ingress", "Egress"}
               and not p["spec"].get("ingress") and not p["spec"].get("egress") for p in policies):
        problems.append("no default-deny NetworkPolicy (ingress and egress) for the namespace")

    network = Policies(policies)
    allowed = network.allowed

    expectations = [
        # (source, target, port, allowed?)
        (None, "gateway", 8443, True), (None, "gateway", 8444, True), (None, "gateway", 8445, True),
        ("gateway", "verification-service", 8002, True), ("gateway", "verification-service", 8012, False),
        ("submission-service", "verification-service", 8012, True),
        ("portal-service", "verification-service", 8012, True),
        ("test-result-service", "verification-service", 8012, False),
        ("distribution-service", "verification-service", 8012, False),
        ("gateway", "test-result-service", 8003, True), ("gateway", "test-result-service", 8013, False),
        ("verification-service", "test-result-service", 8013, True),
        ("submission-service", "test-result-service", 8013, False),
        ("portal-service", "test-result-service", 8013, False),
        ("gateway", "submission-service", 8001, True), ("verification-service", "submission-service", 8001, False),
        ("gateway", "portal-service", 8004, True), (None, "portal-service", 8004, False),
        (None, "verification-service", 8012, False), (None, "test-result-service", 8013, False),
        ("gateway", "data-donation-service", 8007, True), ("gateway", "data-donation-service", 8017, False),
        ("submission-service", "data-donation-service", 8017, True),
        ("submission-service", "data-donation-service", 8007, False),
        ("verification-service", "data-donation-service", 8017, False),
        ("portal-service", "data-donation-service", 8017, False),
        ("test-result-service", "data-donation-service", 8017, False),
        ("distribution-service", "data-donation-service", 8017, False),
        (None, "data-donation-service", 8007, False), (None, "data-donation-service", 8017, False),
    ]
    if federation:
        expectations += [
            (None, "gateway", 8446, True), ("gateway", "federation-service", FEDERATION_CALLBACK_PORT, True),
            (None, "federation-service", FEDERATION_CALLBACK_PORT, False),
            ("submission-service", "federation-service", FEDERATION_CALLBACK_PORT, False),
            ("distribution-service", "federation-service", FEDERATION_CALLBACK_PORT, False),
        ]
    for source, target, port, expected in expectations:
        got = allowed(None if source is None else pod(source), pod(target), port)
        if got != expected:
            who = source or "outside the cluster"
            problems.append(f"NetworkPolicies {'allow' if got else 'deny'} {who} → {target}:{port}"
                            f" (expected {'allowed' if expected else 'denied'})")
    # Database: port 5432 only from the pods that connect to it (egress side: the other pods have no rule that opens
    # it), on 5432 only; in an overlay only towards the database (a pod selector or an ipBlock, never anywhere).
    # (federation-service is an optional component, efgs-gateway compose's rehearsal gateway only.)
    k8s_binaries = [name for name in BINARIES if name not in ("federation-service", "efgs-gateway")]
    database_pods = {(name, "server") for name in k8s_binaries if name != "distribution-service"} \
        | {(name, "migration") for name in k8s_binaries if name != "distribution-service"} \
        | {("distribution-service", "job")}
    if federation:
        # The federation component's callback server and its CronJobs' jobs use the keys database.
        database_pods |= {("federation-service", "server"), ("federation-service", "job")}
    # The pods of the manifests, and what else may run in the namespace: a debug or tool pod of an owner's image.
    candidates = database_pods | {("gateway", "server"), ("postgres", "server")} \
        | {(name, "debug") for name in [*k8s_binaries, "federation-service"]}
    clients = set()
    for p in policies:
        if "Egress" not in p["spec"].get("policyTypes", []):
            continue
        for rule in p["spec"].get("egress", []) or []:
            ports = [x.get("port") for x in rule.get("ports", [])]
            if 5432 in ports or not ports:
                selected = {c for c in candidates if matches(p["spec"].get("podSelector", {}), pod(*c))}
                if selected and not ports:
                    problems.append(f"NetworkPolicy {p['metadata']['name']}: an egress rule without ports for "
                                    f"{sorted(n for n, _ in selected)}")
                if 5432 in ports and ports != [5432]:
                    problems.append(f"NetworkPolicy {p['metadata']['name']}: the database rule opens more than 5432")
                if 5432 in ports:
                    clients |= selected
                    if overlay and not rule.get("to"):
                        problems.append(f"NetworkPolicy {p['metadata']['name']}: database egress to anywhere; an "
                                        "overlay narrows it to the database (egress/0/to: a podSelector or an ipBlock)")
                    for peer in rule.get("to") or []:
                        cidr = peer.get("ipBlock", {}).get("cidr", "")
                        if cidr and int(cidr.rpartition("/")[2] or 0) < 24:
                            problems.append(f"NetworkPolicy {p['metadata']['name']}: database egress to {cidr}, "
                                            "wider than the database's addresses")
    def names(pods: set) -> str:
        return ", ".join(f"{n} ({c})" for n, c in sorted(pods))
    if clients - database_pods:
        problems.append(f"database egress (5432) is open to pods that do not use it: {names(clients - database_pods)}")
    if database_pods - clients:
        problems.append(f"database egress (5432) is closed to {names(database_pods - clients)}")
    # An in-cluster database (the local overlay): its ingress admits exactly those pods, on 5432.
    if any(p["spec"].get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name") == "postgres"
           for p in policies):
        admitted = {c for c in candidates if allowed(pod(*c), {"app.kubernetes.io/name": "postgres"}, 5432)}
        if admitted - database_pods:
            problems.append(f"the postgres pod admits pods that do not use it: {names(admitted - database_pods)}")
        if database_pods - admitted:
            problems.append(f"the postgres pod refuses {names(database_pods - admitted)}")
        if any(allowed(pod(*c), {"app.kubernetes.io/name": "postgres"}, 5433) for c in candidates):
            problems.append("the postgres pod admits ports other than 5432")
    problems += data_donation_network_rules(network)
    if federation:
        problems += federation_network_rules(network, candidates)
    return problems


# What data-donation-service's egress to Apple's DeviceCheck API must leave out: the private, shared (CGNAT),
# loopback and link-local blocks, where the cluster, the nodes and the cloud's metadata service are.
NON_INTERNET_BLOCKS = ("10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16")


def data_donation_network_rules(network: Policies) -> list[str]:
    """data-donation-service: its servers' egress only to DNS, the database and the Internet on 443 (DeviceCheck),
    never to the cluster's or other private addresses; its migration pods' egress not to the Internet; the callers'
    egress reaching it (the gateway the app port, submission-service the internal port)."""
    import ipaddress

    problems: set[str] = set()
    private = [ipaddress.ip_network(block) for block in NON_INTERNET_BLOCKS]
    for component in ("server", "migration"):

        def private_blocks(name: str, peer: dict) -> list[str]:
            block = ipaddress.ip_network(peer["ipBlock"].get("cidr", "0.0.0.0/0"), strict=False)
            excepted = [ipaddress.ip_network(e, strict=False) for e in peer["ipBlock"].get("except", [])]
            return [f"NetworkPolicy {name}: data-donation-service ({component}) may open 443 in {net}, where the "
                    "cluster and the nodes are: except it"
                    for net in private if block.version == net.version and block.overlaps(net)
                    and not any(net.subnet_of(e) for e in excepted if e.version == net.version)]

        internet, found = egress_beyond_cluster(network, "data-donation-service", component,
                                                "DNS, the database and the Internet on 443", private_blocks)
        problems |= found
        if component == "server" and not internet:
            problems.add("data-donation-service (server) has no egress on 443 to Apple's DeviceCheck API")
        if component == "migration" and internet:
            problems.add("data-donation-service (migration) may reach the Internet: a migration needs the database only")
    if not network.reaches(pod("gateway"), pod("data-donation-service"), 8007):
        problems.add("the gateway's egress does not reach data-donation-service:8007")
    if not network.reaches(pod("submission-service"), pod("data-donation-service"), 8017):
        problems.add("submission-service's egress does not reach data-donation-service:8017")
    return sorted(problems)


def federation_network_rules(network: Policies, candidates: set) -> list[str]:
    """The federation component: its callback port only from the gateway's pods (no namespace, address or other pod);
    its pods' egress only to DNS, the database (narrowed with the other clients) and the federation gateway's
    ipBlock on 443, set by the overlay; the gateway's egress reaching the callback."""
    problems: set[str] = set()
    callback = pod("federation-service")
    port = FEDERATION_CALLBACK_PORT
    for name, rule in network.ingress_rules(callback, port):
        if not rule.get("from"):
            problems.add(f"NetworkPolicy {name}: federation-callback:{port} is open to anyone")
        for peer in rule.get("from") or []:
            others = {c for c in candidates if "podSelector" in peer and matches(peer["podSelector"], pod(*c))}
            others -= {("gateway", "server")}
            if set(peer) != {"podSelector"} or others:
                problems.add(f"NetworkPolicy {name}: federation-callback:{port} is open to {peer} (only the gateway's "
                             "pods may reach it)")
    # The runs (CronJobs) call the federation gateway; the callback server (callback-only) must not.
    for component in ("server", "job"):
        reaches_gateway, found = egress_beyond_cluster(network, "federation-service", component,
                                                       "DNS, the database and the federation gateway's ipBlock on 443",
                                                       federation_gateway_block)
        problems |= found
        if component == "job" and not reaches_gateway:
            problems.add("federation-service (job) has no egress to the federation gateway's ipBlock on 443")
        if component == "server" and reaches_gateway:
            problems.add("federation-service (server) may reach the federation gateway: the callback server takes "
                         "callbacks only")
    if not network.reaches(pod("gateway"), callback, port):
        problems.add(f"the gateway's egress does not reach federation-callback:{port}")
    return sorted(problems)
