"""The token-shape table: one generated credential per row, and nothing of it survives."""

from __future__ import annotations

import random
import string
from collections.abc import Callable

import pytest

from expdna.manifest.redact import REDACTED_MARK, redact_argv, redact_text, redact_tree
from expdna.manifest.redact_tokens import TOKEN_SHAPES

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
AGE = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rand(alphabet: str, n: int, rng: random.Random) -> str:
    # A digit somewhere: the shapes that need one, and a realistic key has one.
    body = [rng.choice(alphabet) for _ in range(n)]
    digits = [c for c in alphabet if c.isdigit()]
    if digits and n > 4:
        body[n // 2] = rng.choice(digits)
    return "".join(body)


# name -> (shown prefix, generator of the whole token). One per row of the table.
Sample = Callable[[random.Random], str]
SAMPLES: dict[str, tuple[str, Sample]] = {
    "github": ("ghp_", lambda r: "ghp_" + rand(ALNUM, 36, r)),
    "github-fine-grained": (
        "github_pat_",
        lambda r: "github_pat_" + rand(ALNUM, 22, r) + "_" + rand(ALNUM, 59, r),
    ),
    "gitlab": ("glpat-", lambda r: "glpat-" + rand(URLSAFE, 20, r)),
    "gitlab-runner": ("GR1348941", lambda r: "GR1348941" + rand(URLSAFE, 20, r)),
    "atlassian": ("ATATT3", lambda r: "ATATT3xFfGF0" + rand(URLSAFE, 180, r) + "=" + "1A2B3C4D"),
    "bitbucket-app-password": ("ATBB", lambda r: "ATBB" + rand(ALNUM, 32, r)),
    "sourcegraph": ("sgp_", lambda r: "sgp_" + rand(HEX, 16, r) + "_" + rand(HEX, 40, r)),
    "huggingface": ("hf_", lambda r: "hf_" + rand(ALNUM, 34, r)),
    "huggingface-org": ("api_org_", lambda r: "api_org_" + rand(ALNUM, 34, r)),
    "wandb": ("wandb_v1_", lambda r: "wandb_v1_" + rand(URLSAFE, 77, r)),
    "wandb-local": ("local-", lambda r: "local-" + rand(HEX, 40, r)),
    "replicate": ("r8_", lambda r: "r8_" + rand(ALNUM, 37, r)),
    "neptune": ("eyJ", lambda r: "eyJhcGlfYWRkcmVzcyI6" + rand(B64, 120, r) + "=="),
    "langsmith": ("lsv2_pt_", lambda r: "lsv2_pt_" + rand(HEX, 32, r) + "_" + rand(HEX, 10, r)),
    "pinecone": ("pcsk_", lambda r: "pcsk_" + rand(ALNUM, 6, r) + "_" + rand(ALNUM, 60, r)),
    "databricks": ("dapi", lambda r: "dapi" + rand(HEX, 32, r)),
    "anthropic": ("sk-ant-api03-", lambda r: "sk-ant-api03-" + rand(URLSAFE, 93, r) + "AA"),
    "openai-project": ("sk-proj-", lambda r: "sk-proj-" + rand(URLSAFE, 156, r)),
    "openrouter": ("sk-or-v1-", lambda r: "sk-or-v1-" + rand(HEX, 64, r)),
    "openai": ("sk-", lambda r: "sk-" + rand(ALNUM, 20, r) + "T3BlbkFJ" + rand(ALNUM, 20, r)),
    "groq": ("gsk_", lambda r: "gsk_" + rand(ALNUM, 52, r)),
    "xai": ("xai-", lambda r: "xai-" + rand(ALNUM, 80, r)),
    "nvidia": ("nvapi-", lambda r: "nvapi-" + rand(URLSAFE, 64, r)),
    "perplexity": ("pplx-", lambda r: "pplx-" + rand(ALNUM, 48, r)),
    "tavily": ("tvly-dev-", lambda r: "tvly-dev-" + rand(ALNUM, 32, r)),
    "slack": (
        "xoxb-",
        lambda r: (
            f"xoxb-{rand(string.digits, 12, r)}-{rand(string.digits, 13, r)}-" + rand(ALNUM, 24, r)
        ),
    ),
    "slack-config": ("xoxe.xoxp-", lambda r: "xoxe.xoxp-1-" + rand(UPPER_DIGITS, 163, r)),
    "slack-app": ("xapp-", lambda r: f"xapp-1-A{rand(UPPER_DIGITS, 10, r)}-{rand(HEX, 64, r)}"),
    "slack-webhook": (
        "https://hooks.slack.com/services/",
        lambda r: (
            "https://hooks.slack.com/services/"
            + f"T{rand(UPPER_DIGITS, 8, r)}/B{rand(UPPER_DIGITS, 8, r)}/{rand(ALNUM, 24, r)}"
        ),
    ),
    "discord-webhook": (
        "https://discord.com/api/webhooks/",
        lambda r: (
            "https://discord.com/api/webhooks/"
            + f"{rand(string.digits, 18, r)}/{rand(URLSAFE, 68, r)}"
        ),
    ),
    "discord-bot": (
        "",
        lambda r: "M" + rand(ALNUM, 23, r) + "." + rand(URLSAFE, 6, r) + "." + rand(URLSAFE, 27, r),
    ),
    "telegram-bot": (
        "",
        lambda r: rand(string.digits, 10, r) + ":AA" + rand(URLSAFE, 33, r),
    ),
    "teams-webhook": (
        "https://acme.webhook.office.com/",
        lambda r: (
            "https://acme.webhook.office.com/webhookb2/"
            + f"{rand(HEX, 8, r)}-{rand(HEX, 4, r)}@{rand(HEX, 8, r)}/IncomingWebhook/"
            + rand(HEX, 32, r)
        ),
    ),
    "twilio": ("SK", lambda r: "SK" + rand(HEX, 32, r)),
    "sendgrid": ("SG.", lambda r: "SG." + rand(URLSAFE, 22, r) + "." + rand(URLSAFE, 43, r)),
    "mailgun": ("key-", lambda r: "key-" + rand(HEX, 32, r)),
    "mailchimp": ("", lambda r: rand(HEX, 32, r) + "-us21"),
    "aws-access-key-id": ("AKIA", lambda r: "AKIA" + rand(UPPER_DIGITS, 16, r)),
    "aws-bedrock": ("ABSK", lambda r: "ABSK" + rand(B64, 132, r) + "=="),
    "google-api-key": ("AIza", lambda r: "AIza" + rand(URLSAFE, 35, r)),
    "google-oauth": ("ya29.", lambda r: "ya29." + rand(URLSAFE, 120, r)),
    "google-client-secret": ("GOCSPX-", lambda r: "GOCSPX-" + rand(URLSAFE, 28, r)),
    "azure-ad-client-secret": (
        "",
        lambda r: rand(ALNUM, 3, r) + "8Q~" + rand(ALNUM + "_~.", 34, r),
    ),
    "alibaba": ("LTAI", lambda r: "LTAI" + rand(ALNUM, 20, r)),
    "digitalocean": ("dop_v1_", lambda r: "dop_v1_" + rand(HEX, 64, r)),
    "heroku": ("HRKU-", lambda r: "HRKU-AA" + rand(URLSAFE, 58, r)),
    "flyio": ("fm2_", lambda r: "fm2_" + rand(B64, 120, r) + "="),
    "cloudflare-origin-ca": (
        "v1.0-",
        lambda r: "v1.0-" + rand(HEX, 24, r) + "-" + rand(HEX, 146, r),
    ),
    "vault": ("hvs.", lambda r: "hvs." + rand(URLSAFE, 90, r)),
    "terraform-cloud": (
        "",
        lambda r: rand(ALNUM, 14, r) + ".atlasv1." + rand(URLSAFE, 67, r),
    ),
    "doppler": ("dp.st.", lambda r: "dp.st.prd."[:6] + rand(ALNUM, 43, r)),
    "pulumi": ("pul-", lambda r: "pul-" + rand(HEX, 40, r)),
    "1password-service": ("ops_", lambda r: "ops_eyJ" + rand(B64, 250, r) + "="),
    "1password-secret-key": (
        "A3-",
        lambda r: "A3-" + "-".join(rand(UPPER_DIGITS, n, r) for n in (6, 11, 5, 5, 5)),
    ),
    "openshift": ("sha256~", lambda r: "sha256~" + rand(URLSAFE, 43, r)),
    "azure-storage": ("AccountKey=", lambda r: "AccountKey=" + rand(B64, 86, r) + "=="),
    "azure-sas": ("&sig=", lambda r: "&sig=" + rand(ALNUM, 43, r) + "%3D"),
    "aws-presigned": ("X-Amz-Signature=", lambda r: "X-Amz-Signature=" + rand(HEX, 64, r)),
    "npm": ("npm_", lambda r: "npm_" + rand(ALNUM, 36, r)),
    "pypi": ("pypi-", lambda r: "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 150, r)),
    "docker-hub": ("dckr_pat_", lambda r: "dckr_pat_" + rand(URLSAFE, 27, r)),
    "rubygems": ("rubygems_", lambda r: "rubygems_" + rand(HEX, 48, r)),
    "artifactory": ("AKCp", lambda r: "AKCp" + rand(ALNUM, 69, r)),
    "artifactory-reference": ("cmVmd", lambda r: "cmVmd" + rand(ALNUM, 59, r)),
    "circleci": ("CCIPAT_", lambda r: "CCIPAT_" + rand(ALNUM, 22, r) + "_" + rand(HEX, 40, r)),
    "buildkite": ("bkua_", lambda r: "bkua_" + rand(HEX, 40, r)),
    "sonarqube": ("sqp_", lambda r: "sqp_" + rand(HEX, 40, r)),
    "harness": (
        "pat.",
        lambda r: f"pat.{rand(URLSAFE, 22, r)}.{rand(ALNUM, 24, r)}.{rand(ALNUM, 20, r)}",
    ),
    "prefect": ("pnu_", lambda r: "pnu_" + rand(ALNUM, 36, r)),
    "postman": ("PMAK-", lambda r: "PMAK-" + rand(HEX, 24, r) + "-" + rand(HEX, 34, r)),
    "linear": ("lin_api_", lambda r: "lin_api_" + rand(ALNUM, 40, r)),
    "notion": ("ntn_", lambda r: "ntn_" + rand(string.digits, 11, r) + rand(ALNUM, 35, r)),
    "planetscale": ("pscale_tkn_", lambda r: "pscale_tkn_" + rand(URLSAFE, 43, r)),
    "supabase": ("sbp_", lambda r: "sbp_" + rand(HEX, 40, r)),
    "clickhouse": ("4b1d", lambda r: "4b1d" + rand(ALNUM, 38, r)),
    "sentry-user": ("sntryu_", lambda r: "sntryu_" + rand(HEX, 64, r)),
    "sentry-org": (
        "sntrys_",
        lambda r: "sntrys_eyJpYXQiO" + rand(B64, 120, r) + "_" + rand(B64, 43, r),
    ),
    "grafana-cloud": ("glc_", lambda r: "glc_" + rand(B64, 80, r) + "=="),
    "grafana-service-account": (
        "glsa_",
        lambda r: "glsa_" + rand(ALNUM, 32, r) + "_" + rand(HEX, 8, r),
    ),
    "grafana-api-key": ("eyJrIjoi", lambda r: "eyJrIjoi" + rand(ALNUM, 92, r) + "=="),
    "new-relic": ("NRAK-", lambda r: "NRAK-" + rand(UPPER_DIGITS, 27, r)),
    "dynatrace": ("dt0c01.", lambda r: f"dt0c01.{rand(UPPER_DIGITS, 24, r)}.{rand(ALNUM, 64, r)}"),
    "stripe": ("sk_live_", lambda r: "sk_live_" + rand(ALNUM, 24, r)),
    "stripe-webhook": ("whsec_", lambda r: "whsec_" + rand(ALNUM, 32, r)),
    "shopify": ("shpat_", lambda r: "shpat_" + rand(HEX, 32, r)),
    "age-secret-key": ("AGE-SECRET-KEY-1", lambda r: "AGE-SECRET-KEY-1" + rand(AGE, 58, r)),
    "jwt": (
        "eyJ",
        lambda r: (
            "eyJhbGciOiJIUzI1NiJ9." + "eyJ" + rand(URLSAFE, 40, r) + "." + rand(URLSAFE, 43, r)
        ),
    ),
    "bearer": ("Bearer ", lambda r: "Bearer " + rand(URLSAFE, 40, r)),
    "authorization": (
        "Authorization: Basic ",
        lambda r: "Authorization: Basic " + rand(B64, 28, r) + "==",
    ),
}


def test_every_row_has_a_case_and_names_are_unique() -> None:
    names = [row.name for row in TOKEN_SHAPES]
    assert len(names) == len(set(names))
    assert set(SAMPLES) == set(names)


def test_families_cover_what_a_training_repository_holds() -> None:
    families = {row.family for row in TOKEN_SHAPES}
    assert families >= {"cloud", "vcs", "ci", "registry", "ml", "llm", "chat", "db"}
    assert "observability" in families


@pytest.mark.parametrize("name", list(SAMPLES), ids=str)
def test_row(name: str) -> None:
    shown, make = SAMPLES[name]
    rng = random.Random(name)
    token = make(rng)
    body = token[len(shown) :]
    for out in (
        redact_text(token),
        redact_text(f"the key is {token}, rotate it"),
        redact_text(f'{{"remote": "{token}"}}'),
        redact_argv(["train.py", "--remote", token])[2],
        redact_tree({"config": {"selected_env": {"TRAINER_SETTING": token}}})[0]["config"][
            "selected_env"
        ]["TRAINER_SETTING"],
    ):
        assert body[-12:] not in out, out
        assert REDACTED_MARK in out
    assert redact_text(token).startswith(shown)
    assert redact_text(redact_text(token)) == redact_text(token)  # idempotent
