"""The NetworkPolicy rules (deploycheck.network): each fires on a render broken in one place, and none on the committed
base and overlays."""

from __future__ import annotations

import pytest
from conftest import fires, named

from deploycheck.network import Policies, matches, network_rules, pod

PRODUCTION = "overlays/production-example"


def policy(docs: list[dict], name: str) -> dict:
    return named(docs, "NetworkPolicy", name)["spec"]


@pytest.mark.parametrize("target", ["base", "overlays/local", PRODUCTION])
def test_committed_renders_pass(render, target):
    assert network_rules(render(target), overlay=target != "base") == []


def test_matches_follows_label_selector_operators():
    labels = pod("submission-service")
    assert matches({"matchLabels": {"app.kubernetes.io/name": "submission-service"}}, labels)
    assert not matches({"matchLabels": {"app.kubernetes.io/name": "portal-service"}}, labels)
    assert not matches({"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "NotIn",
                                              "values": ["submission-service"]}]}, labels)
    assert not matches({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, labels)
    assert matches({}, labels)


def test_ingress_from_an_ip_block_admits_outside_callers_only(render):
    network = Policies([d for d in render("base") if d["kind"] == "NetworkPolicy"])
    assert network.allowed(None, pod("gateway"), 8443)
    assert not network.allowed(None, pod("verification-service"), 8012)
    assert network.allowed(pod("submission-service"), pod("verification-service"), 8012)
    assert not network.allowed(pod("distribution-service"), pod("verification-service"), 8012)


def test_missing_default_deny_fires(render):
    docs = [d for d in render("base") if d["metadata"]["name"] != "default-deny"]
    assert fires(network_rules(docs), "no default-deny NetworkPolicy")


def test_an_internal_port_opened_to_another_service_fires(render):
    docs = render("base")
    policy(docs, "verification-service")["ingress"][1]["from"].append(
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "distribution-service"}}})
    assert fires(network_rules(docs), "allow distribution-service → verification-service:8012")


def test_a_public_port_closed_fires(render):
    docs = render("base")
    policy(docs, "verification-service")["ingress"][0]["from"] = [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "portal-service"}}}]
    assert fires(network_rules(docs), "deny gateway → verification-service:8002")


def test_database_egress_for_a_pod_that_does_not_use_it_fires(render):
    docs = render("base")
    names = policy(docs, "database-clients")["podSelector"]["matchExpressions"][0]["values"]
    names.append("gateway")
    assert fires(network_rules(docs), "database egress (5432) is open to pods that do not use it: gateway")


def test_database_egress_closed_to_a_client_fires(render):
    docs = render("base")
    names = policy(docs, "database-clients")["podSelector"]["matchExpressions"][0]["values"]
    names.remove("portal-service")
    assert fires(network_rules(docs), "database egress (5432) is closed to portal-service")


def test_database_rule_with_more_ports_fires(render):
    docs = render("base")
    policy(docs, "database-clients")["egress"][0]["ports"].append({"port": 5433, "protocol": "TCP"})
    assert fires(network_rules(docs), "the database rule opens more than 5432")


def test_an_egress_rule_without_ports_fires(render):
    docs = render("base")
    del policy(docs, "database-clients")["egress"][0]["ports"]
    assert fires(network_rules(docs), "an egress rule without ports")


def test_overlay_database_egress_to_anywhere_or_wide_fires(render):
    docs = render(PRODUCTION)
    rule = policy(docs, "database-clients")["egress"][0]
    rule["to"] = [{"ipBlock": {"cidr": "10.0.0.0/8"}}]
    assert fires(network_rules(docs, overlay=True), "database egress to 10.0.0.0/8, wider than the database's")
    del rule["to"]
    assert fires(network_rules(docs, overlay=True), "database egress to anywhere")


def test_data_donation_egress_into_private_addresses_fires(render):
    docs = render("base")
    block = policy(docs, "data-donation-devicecheck-egress")["egress"][0]["to"][0]["ipBlock"]
    block["except"].remove("169.254.0.0/16")
    assert fires(network_rules(docs), "may open 443 in 169.254.0.0/16")


def test_data_donation_egress_beyond_dns_database_and_443_fires(render):
    docs = render("base")
    policy(docs, "data-donation-devicecheck-egress")["egress"].append(
        {"ports": [{"port": 8080, "protocol": "TCP"}], "to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]})
    assert fires(network_rules(docs), "data-donation-service (server) may open [8080]")


def test_data_donation_without_devicecheck_egress_fires(render):
    docs = [d for d in render("base") if d["metadata"]["name"] != "data-donation-devicecheck-egress"]
    assert fires(network_rules(docs), "has no egress on 443 to Apple's DeviceCheck API")


def test_data_donation_migration_reaching_the_internet_fires(render):
    docs = render("base")
    selector = policy(docs, "data-donation-devicecheck-egress")["podSelector"]
    selector["matchLabels"].pop("app.kubernetes.io/component")
    assert fires(network_rules(docs), "data-donation-service (migration) may reach the Internet")


def test_callers_not_reaching_data_donation_fire(render):
    docs = render("base")
    gateway = policy(docs, "gateway")
    gateway["egress"] = [r for r in gateway["egress"] if r["ports"][0]["port"] != 8007]
    assert fires(network_rules(docs), "the gateway's egress does not reach data-donation-service:8007")


def test_federation_callback_open_to_anyone_fires(render):
    docs = render(PRODUCTION)
    del policy(docs, "federation-callback")["ingress"][0]["from"]
    assert fires(network_rules(docs, overlay=True), "federation-callback:8006 is open to anyone")


def test_federation_callback_open_to_another_pod_fires(render):
    docs = render(PRODUCTION)
    policy(docs, "federation-callback")["ingress"][0]["from"].append(
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "submission-service"}}})
    assert fires(network_rules(docs, overlay=True), "(only the gateway's pods may reach it)")


@pytest.mark.parametrize("cidr, fragment", [
    ("192.0.2.1/32", "the federation gateway's address is the component's placeholder"),
    ("203.0.0.0/16", "federation egress to 203.0.0.0/16, wider than the federation gateway's addresses"),
])
def test_federation_gateway_egress_address_fires(render, cidr, fragment):
    docs = render(PRODUCTION)
    policy(docs, "federation-gateway-egress")["egress"][0]["to"][0]["ipBlock"]["cidr"] = cidr
    assert fires(network_rules(docs, overlay=True), fragment)


def test_federation_callback_server_reaching_the_federation_gateway_fires(render):
    docs = render(PRODUCTION)
    policy(docs, "federation-gateway-egress")["podSelector"]["matchLabels"].pop("app.kubernetes.io/component")
    assert fires(network_rules(docs, overlay=True), "federation-service (server) may reach the federation gateway")


def test_federation_jobs_without_egress_fire(render):
    docs = [d for d in render(PRODUCTION) if d["metadata"]["name"] != "federation-gateway-egress"]
    assert fires(network_rules(docs, overlay=True), "federation-service (job) has no egress")


def test_gateway_not_reaching_the_callback_fires(render):
    docs = render(PRODUCTION)
    gateway = policy(docs, "gateway")
    gateway["egress"] = [r for r in gateway["egress"] if r["ports"][0]["port"] != 8006]
    assert fires(network_rules(docs, overlay=True), "the gateway's egress does not reach federation-callback:8006")
