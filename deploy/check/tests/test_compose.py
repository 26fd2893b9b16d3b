"""The compose rules (deploycheck.compose) on `docker-compose config` of deploy/compose.yaml: the committed file
passes, and each rule fires on a copy broken in one place."""

from __future__ import annotations

import pytest

from conftest import fires
from deploycheck.compose import compose_internal_url_problems, compose_network_problems, compose_problems


def set_condition(config: dict, service: str, dependency: str, condition: str) -> None:
    config["services"][service]["depends_on"][dependency]["condition"] = condition


def test_committed_compose_passes(compose):
    assert compose_problems(compose) == []


@pytest.mark.parametrize("mutate, fragment", [
    (lambda c: c["services"].pop("portal-service"), "no service portal-service"),
    (lambda c: c["services"]["portal-service"].update(image="other/portal-service:latest"),
     "portal-service: image is not en-backend/portal-service:<tag>"),
    (lambda c: c["services"]["portal-service"]["build"]["args"].update(SERVICE="verification-service"),
     "portal-service: build does not use deploy/Dockerfile with SERVICE=portal-service"),
    (lambda c: c["services"]["portal-service"]["build"].update(dockerfile="deploy/Containerfile"),
     "portal-service: build does not use deploy/Dockerfile with SERVICE=portal-service"),
    (lambda c: c["services"]["portal-service"]["environment"].update(HTTP_HOST="127.0.0.1"),
     "portal-service: HTTP_HOST is not 0.0.0.0"),
    (lambda c: c["services"]["portal-service"]["environment"].update(DATABASE_AUTO_MIGRATE="true"),
     "portal-service: DATABASE_AUTO_MIGRATE should be false"),
    (lambda c: c["services"]["portal-service"].update(read_only=False),
     "portal-service: root filesystem is not read-only"),
    (lambda c: c["services"]["portal-service"].pop("read_only"), "portal-service: root filesystem is not read-only"),
], ids=["missing", "image", "build-arg", "dockerfile", "http-host", "auto-migrate", "read-write", "no-read-only"])
def test_service_rules(compose, mutate, fragment):
    assert not fires(compose_problems(compose), fragment)
    mutate(compose)
    assert fires(compose_problems(compose), fragment)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda c: c["services"].pop("migrate-portal"), "no one-shot migration service migrate-portal"),
    (lambda c: c["services"]["migrate-portal"].update(command=["serve"]),
     "migrate-portal: command is not --migrate-only"),
    (lambda c: c["services"]["migrate-portal"].update(image="en-backend/portal-service:previous"),
     "migrate-portal: image differs from portal-service's"),
    (lambda c: c["services"]["migrate-portal"].update(restart="on-failure"),
     "migrate-portal: a one-shot step must not restart"),
    (lambda c: set_condition(c, "portal-service", "migrate-portal", "service_started"),
     "portal-service: does not wait for migrate-portal to complete successfully"),
    (lambda c: c["services"]["portal-service"]["depends_on"].pop("migrate-portal"),
     "portal-service: does not wait for migrate-portal to complete successfully"),
    (lambda c: set_condition(c, "migrate-portal", "postgres", "service_started"),
     "migrate-portal: does not wait for a healthy postgres"),
    (lambda c: set_condition(c, "distribution-service", "migrate-submission", "service_healthy"),
     "distribution-service: does not wait for the key store's migrations"),
    (lambda c: c["services"]["federation-service"]["depends_on"].pop("migrate-submission"),
     "federation-service: does not wait for the key store's migrations"),
], ids=["missing", "command", "image", "restart", "started-only", "no-dependency", "postgres-started",
        "key-store-healthy", "key-store-missing"])
def test_migration_rules(compose, mutate, fragment):
    assert not fires(compose_problems(compose), fragment)
    mutate(compose)
    assert fires(compose_problems(compose), fragment)


@pytest.mark.parametrize("loop", ["distribution-service", "federation-service", "efgs-gateway"])
def test_loops_run_serve(compose, loop):
    fragment = f"{loop}: not run as a loop (command serve)"
    assert not fires(compose_problems(compose), fragment)
    compose["services"][loop]["command"] = ["--once"]
    assert fires(compose_problems(compose), fragment)


@pytest.mark.parametrize("mutate", [
    lambda svc: svc.pop("healthcheck"),
    lambda svc: svc["healthcheck"].update(disable=True),
], ids=["removed", "disabled"])
def test_healthy_dependency_needs_a_healthcheck(compose, mutate):
    fragment = "migrate-portal: waits for postgres to be healthy, which has no healthcheck"
    assert not fires(compose_problems(compose), fragment)
    mutate(compose["services"]["postgres"])
    assert fires(compose_problems(compose), fragment)


@pytest.mark.parametrize("upstream", ["portal-service", "distribution-service", "federation-service"])
def test_gateway_waits_for_healthy_upstreams(compose, upstream):
    fragment = f"gateway: does not wait for a healthy {upstream}"
    assert not fires(compose_problems(compose), fragment)
    set_condition(compose, "gateway", upstream, "service_started")
    assert fires(compose_problems(compose), fragment)


def test_only_the_gateway_publishes_ports(compose):
    fragment = "only the gateway may publish ports"
    assert not fires(compose_problems(compose), fragment)
    compose["services"]["postgres"]["ports"] = [{"published": 5432, "target": 5432}]
    assert fires(compose_problems(compose), fragment)


def test_postgres_init_is_mounted(compose):
    fragment = "postgres: deploy/postgres/init.sh is not mounted into /docker-entrypoint-initdb.d"
    assert not fires(compose_problems(compose), fragment)
    volumes = compose["services"]["postgres"]["volumes"]
    compose["services"]["postgres"]["volumes"] = [v for v in volumes if "10-en-roles.sh" not in v]
    assert fires(compose_problems(compose), fragment)


def test_compose_problems_include_network_and_url_rules(compose):
    compose["services"]["submission-service"]["environment"]["VERIFICATION_INTERNAL_URL"] = "http://verifier:8012"
    compose["networks"]["gateway-portal"]["internal"] = False
    problems = compose_problems(compose)
    assert fires(problems, "VERIFICATION_INTERNAL_URL=http://verifier:8012 names no compose service")
    assert fires(problems, "network gateway-portal is not internal")


def test_committed_internal_urls_pass(compose):
    assert compose_internal_url_problems(compose["services"]) == []


@pytest.mark.parametrize("url, fragment", [
    ("http://verifier:8012",
     "submission-service: VERIFICATION_INTERNAL_URL=http://verifier:8012 names no compose service"),
    ("http://verification-service:8002",
     "submission-service: VERIFICATION_INTERNAL_URL=http://verification-service:8002 is not verification-service's "
     "INTERNAL_HTTP_PORT"),
    ("http://verification-service", "is not verification-service's INTERNAL_HTTP_PORT"),
], ids=["unknown-host", "public-port", "no-port"])
def test_internal_url_names_a_peer_port(compose, url, fragment):
    services = compose["services"]
    assert not fires(compose_internal_url_problems(services), fragment)
    services["submission-service"]["environment"]["VERIFICATION_INTERNAL_URL"] = url
    assert fires(compose_internal_url_problems(services), fragment)


def test_internal_url_peer_shares_a_network(compose):
    services = compose["services"]
    fragment = "submission-service: shares no network with verification-service, which VERIFICATION_INTERNAL_URL names"
    assert not fires(compose_internal_url_problems(services), fragment)
    del services["submission-service"]["networks"]["submission-verification"]
    assert fires(compose_internal_url_problems(services), fragment)


def test_internal_urls_of_migration_steps_are_not_checked(compose):
    services = compose["services"]
    services["migrate-submission"]["environment"]["VERIFICATION_INTERNAL_URL"] = "http://verifier:8012"
    assert not fires(compose_internal_url_problems(services), "migrate-submission")
    services["submission-service"]["environment"]["VERIFICATION_INTERNAL_URL"] = "http://verifier:8012"
    assert fires(compose_internal_url_problems(services), "submission-service")


def test_committed_networks_pass(compose):
    assert compose_network_problems(compose["services"], compose["networks"]) == []


def test_every_container_joins_a_network(compose):
    services, networks = compose["services"], compose["networks"]
    fragment = "portal-service: joins no network of its own"
    assert not fires(compose_network_problems(services, networks), fragment)
    services["portal-service"]["networks"] = {}
    assert fires(compose_network_problems(services, networks), fragment)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda s, n: n["gateway-portal"].update(internal=False),
     "network gateway-portal is not internal but joined by ['portal-service']"),
    (lambda s, n: n["db-keys"].pop("internal"), "network db-keys is not internal but joined by"),
    (lambda s, n: s["portal-service"]["networks"].update(public=None),
     "network public is not internal but joined by ['portal-service']"),
], ids=["internal-false", "internal-unset", "public-network"])
def test_networks_are_internal(compose, mutate, fragment):
    services, networks = compose["services"], compose["networks"]
    assert not fires(compose_network_problems(services, networks), fragment)
    mutate(services, networks)
    assert fires(compose_network_problems(services, networks), fragment)


def test_the_federation_egress_network_may_route_out_for_its_members_only(compose):
    services, networks = compose["services"], compose["networks"]
    fragment = "network federation-efgs is not internal"
    networks["federation-efgs"]["internal"] = False
    assert not fires(compose_network_problems(services, networks), fragment)
    services["submission-service"]["networks"]["federation-efgs"] = None
    assert fires(compose_network_problems(services, networks), fragment)


@pytest.mark.parametrize("service, network, fragment", [
    ("test-result-service", "gateway-portal",
     "portal-service and test-result-service share the network gateway-portal, an edge neither calls"),
    ("efgs", "gateway-federation", "efgs and gateway share the network gateway-federation, an edge neither calls"),
    ("portal-service", "db-keys", "distribution-service and portal-service share the network db-keys"),
], ids=["service-service", "third-party", "database-network"])
def test_networks_follow_the_edges(compose, service, network, fragment):
    services, networks = compose["services"], compose["networks"]
    assert not fires(compose_network_problems(services, networks), fragment)
    services[service]["networks"][network] = None
    assert fires(compose_network_problems(services, networks), fragment)


@pytest.mark.parametrize("url", ["http://postgres", "http://verification-service:80x1", "http://verification-service"])
def test_an_internal_url_without_the_internal_port_fires(compose, url):
    compose["services"]["submission-service"]["environment"]["VERIFICATION_INTERNAL_URL"] = url
    assert fires(compose_internal_url_problems(compose["services"]), f"VERIFICATION_INTERNAL_URL={url}")
