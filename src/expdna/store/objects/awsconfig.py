"""Endpoint, region and credentials for a bucket, from the standard AWS settings only.

Environment first (``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, ``AWS_REGION`` /
``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` [+
``AWS_SESSION_TOKEN``]), then the profile (``AWS_PROFILE``, else ``default``) in the shared
files (``AWS_SHARED_CREDENTIALS_FILE``, ``AWS_CONFIG_FILE``; ``~/.aws/credentials`` and
``~/.aws/config``), as the AWS CLI reads them. Keys come as a pair from one place (the
environment's pair wins whole). What is not found is left to the client library's own
chain (web identity, container and instance credentials). expdna has no setting of its
own for any of these, never logs a key, and never writes one anywhere.
"""

from __future__ import annotations

import configparser
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

#: Environment variable -> client setting (the first set wins for each setting).
_ENDPOINT_VARS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
_REGION_VARS = ("AWS_REGION", "AWS_DEFAULT_REGION")
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class AwsSettings:
    """What the client is given; ``secrets`` never leave this object but to the client."""

    endpoint: str | None = None
    region: str = DEFAULT_REGION
    profile: str | None = None
    secrets: dict[str, str] = field(default_factory=dict, repr=False)

    def client_config(self) -> dict[str, str]:
        config = dict(self.secrets)
        config["region"] = self.region
        if self.endpoint is not None:
            config["endpoint"] = self.endpoint
        return config


def _section(path: Path, names: tuple[str, ...]) -> dict[str, str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError) as exc:
        log.warning("AWS settings file %s is unreadable (%s); ignored", path, type(exc).__name__)
        return {}
    for name in names:
        if parser.has_section(name):
            return {key: value.strip() for key, value in parser.items(name) if value.strip()}
    return {}


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((environ[n] for n in names if environ.get(n)), None)


def resolve(environ: Mapping[str, str] = os.environ) -> AwsSettings:
    """The settings ``environ`` and the shared AWS files give."""
    home = Path(environ.get("HOME") or Path.home())
    profile = environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"
    config_file = Path(environ.get("AWS_CONFIG_FILE") or home / ".aws" / "config")
    credentials_file = Path(
        environ.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials"
    )
    section = ("default",) if profile == "default" else (f"profile {profile}", profile)
    config = _section(config_file, section)
    credentials = _section(credentials_file, (profile,))
    endpoint = _first(environ, _ENDPOINT_VARS) or config.get("endpoint_url")
    region = _first(environ, _REGION_VARS) or config.get("region") or DEFAULT_REGION
    secrets: dict[str, str] = {}
    if environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        secrets["access_key_id"] = environ["AWS_ACCESS_KEY_ID"]
        secrets["secret_access_key"] = environ["AWS_SECRET_ACCESS_KEY"]
        if environ.get("AWS_SESSION_TOKEN"):
            secrets["session_token"] = environ["AWS_SESSION_TOKEN"]
    else:
        for source in (credentials, config):  # the credentials file wins, as for the CLI
            if source.get("aws_access_key_id") and source.get("aws_secret_access_key"):
                secrets["access_key_id"] = source["aws_access_key_id"]
                secrets["secret_access_key"] = source["aws_secret_access_key"]
                if source.get("aws_session_token"):
                    secrets["session_token"] = source["aws_session_token"]
                break
    named = profile if profile != "default" or config or credentials else None
    return AwsSettings(endpoint=endpoint, region=region, profile=named, secrets=secrets)
