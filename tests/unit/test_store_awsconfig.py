"""Endpoint, region and keys for a bucket come from the standard AWS settings only."""

from __future__ import annotations

from pathlib import Path

from expdna.store.config import StoreConfig
from expdna.store.objects.awsconfig import resolve


def _files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "config").write_text(
        "[default]\nregion = eu-west-1\n\n"
        "[profile team]\nregion = eu-central-1\nendpoint_url = http://minio.internal:9000\n"
    )
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = default-secret\n\n"
        "[team]\naws_access_key_id = AKTEAM\naws_secret_access_key = team-secret\n"
        "aws_session_token = team-token\n"
    )
    return {
        "HOME": str(tmp_path / "home"),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
    }


def test_a_profile_gives_endpoint_region_and_keys(tmp_path: Path) -> None:
    found = resolve({**_files(tmp_path), "AWS_PROFILE": "team"})
    assert found.endpoint == "http://minio.internal:9000"
    assert found.region == "eu-central-1"
    assert found.client_config()["access_key_id"] == "AKTEAM"
    assert found.client_config()["session_token"] == "team-token"
    default = resolve(_files(tmp_path))
    assert (default.region, default.endpoint) == ("eu-west-1", None)
    assert default.client_config()["secret_access_key"] == "default-secret"


def test_the_environment_wins_and_its_key_pair_is_taken_whole(tmp_path: Path) -> None:
    env = {
        **_files(tmp_path),
        "AWS_PROFILE": "team",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
        "AWS_REGION": "ap-south-1",
        "AWS_ACCESS_KEY_ID": "AKENV",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
    }
    config = resolve(env).client_config()
    assert config["endpoint"] == "http://127.0.0.1:8333" and config["region"] == "ap-south-1"
    assert (config["access_key_id"], config["secret_access_key"]) == ("AKENV", "env-secret")
    assert "session_token" not in config  # not the profile's token with the env's keys
    assert "env-secret" not in repr(resolve(env))  # never in a log line or a traceback


def test_no_files_and_no_variables_leave_it_to_the_client(tmp_path: Path) -> None:
    found = resolve({"HOME": str(tmp_path)})
    assert found.client_config() == {"region": "us-east-1"}


def test_a_bucket_url_names_a_remote_store_with_a_local_cache(tmp_path: Path) -> None:
    config = StoreConfig.resolve(None, None, {"EXPDNA_STORE": "s3://team-runs/expdna/"})
    assert config.remote == "s3://team-runs/expdna/" and config.named
    assert config.root.parts[-3:] == ("s3", "team-runs", "expdna")
    assert StoreConfig.resolve(tmp_path).remote is None
