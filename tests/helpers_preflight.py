"""Preflight test helpers: fake AWS environment, resolved presets, moto and Stubber clients."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from accelstack.catalog import load_catalog
from accelstack.preflight import AwsClients, CheckResult
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec, read_yaml

from .conftest import STACKS

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real credentials, no instance metadata, no shared config: nothing reaches AWS."""
    for key, value in FAKE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/accelstack-test-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/accelstack-test-creds")


def stack_from(preset: str, edit: Any = None) -> Stack:
    """A resolved preset, optionally edited (a function of the raw YAML mapping)."""
    data = copy.deepcopy(read_yaml(STACKS / f"{preset}.yaml"))
    if edit is not None:
        edit(data)
    catalog = load_catalog()
    return resolve(parse_spec(data, f"{preset}.yaml"), catalog)


def with_zone(stack: Stack, zone_id: str, pool: int = 0) -> Stack:
    pools = list(stack.pools)
    pools[pool] = dataclasses.replace(pools[pool], zone_id=zone_id)
    return dataclasses.replace(stack, pools=tuple(pools))


#: One session with explicit fake credentials: client creation reuses its loaded models.
SESSION = boto3.Session(
    aws_access_key_id="testing", aws_secret_access_key="testing", aws_session_token="testing"
)
SERVICES = {
    "ec2": "ec2",
    "service_quotas": "service-quotas",
    "ssm": "ssm",
    "s3": "s3",
    "eks": "eks",
    "sts": "sts",
}


class Unused:
    """Stands in for a client the check under test must not call."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"unexpected call to the {self.name} client: {attr}")


def make_clients(region: str, *real: str, session: Any = None, **overrides: Any) -> AwsClients:
    """Clients for `region`: `real` names get real boto3 clients (moto-backed inside mock_aws),
    `overrides` are stubbed clients, the rest refuse to be used."""
    sess = session or SESSION
    clients: dict[str, Any] = {k: Unused(k) for k in SERVICES}
    for k in real:
        clients[k] = sess.client(SERVICES[k], region_name=region)
    clients.update(overrides)
    return AwsClients(region=region, **clients)


def stubbed(service: str, region: str) -> tuple[Any, Stubber]:
    client = SESSION.client(service, region_name=region)
    return client, Stubber(client)


def only(results: list[CheckResult]) -> CheckResult:
    assert len(results) == 1, results
    return results[0]


def quota(code: str, value: float) -> dict[str, Any]:
    """A GetServiceQuota / GetAWSDefaultServiceQuota answer."""
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "Value": value}}
