"""The token-shape table: one row per credential family a training repository may hold.

Data only; :mod:`expdna.manifest.redact_rules` compiles each row into a rule. A row names
the family, the cheap substrings that must be present before its regex runs (``hints``),
the regex of the part kept visible (``prefix``: ``hf_`` in ``hf_***``) and the regex of
the secret body. Rows are ordered most specific first: a looser shape later in the table
must not see a body that an earlier one reports under its own prefix.

The families were chosen against gitleaks' ``config/gitleaks.toml`` and detect-secrets'
plugins; ``docs/en/guide.md`` ("What redaction covers") lists what is covered and what
is deliberately left to the name rules and the entropy backstop. Every row has a test case
in ``tests/unit/test_redact_tokens.py``.
"""

from __future__ import annotations

from typing import NamedTuple


class TokenShape(NamedTuple):
    name: str
    family: str  # cloud, vcs, ci, registry, ml, llm, chat, db, observability, other
    hints: tuple[str, ...]
    prefix: str  # regex, shown in the output; empty: nothing of the token is shown
    body: str  # regex, replaced by the mark
    not_after: str = ""  # characters that, right before the match, make it part of a word
    names_kept: bool = False  # a body of `-`-joined words (a run name) is not this token


# The body may not run on into more word characters.
_E = r"(?![A-Za-z0-9])"
_EW = r"(?![\w\-])"

TOKEN_SHAPES: tuple[TokenShape, ...] = (
    # --- version control -------------------------------------------------------------
    TokenShape("github", "vcs", ("gh",), r"gh[pousr]_", r"[A-Za-z0-9]{30,}" + _E),
    TokenShape("github-fine-grained", "vcs", ("github_pat_",), r"github_pat_", r"\w{22,}"),
    TokenShape(
        "gitlab",
        "vcs",
        ("gl",),
        r"gl(?:pat|dt|rt|ptt|ft|imt|agent|oas|cbt|soat|ffct|wt)-",
        r"[\w\-]{20,}(?:\.[\w\-]+)*",
    ),
    TokenShape("gitlab-runner", "ci", ("GR1348941",), r"GR1348941", r"[\w\-]{20,}"),
    TokenShape("atlassian", "vcs", ("ATATT3", "ATCTT3"), r"AT[AC]TT3", r"[\w\-=]{60,}"),
    TokenShape("bitbucket-app-password", "vcs", ("ATBB",), r"ATBB", r"[A-Za-z0-9_=.\-]{28,}"),
    TokenShape(
        "sourcegraph", "vcs", ("sgp_",), r"sgp_", r"(?:[0-9a-fA-F]{16}_|local_)?[0-9a-fA-F]{40}"
    ),
    # --- ML platforms ----------------------------------------------------------------
    TokenShape("huggingface", "ml", ("hf_",), r"hf_", r"[A-Za-z0-9]{30,}" + _E),
    TokenShape("huggingface-org", "ml", ("api_org_",), r"api_org_", r"[A-Za-z0-9]{30,}" + _E),
    TokenShape("wandb", "ml", ("wandb_v1_",), r"wandb_v1_", r"[\w\-]{20,}"),
    TokenShape("wandb-local", "ml", ("local-",), r"local-", r"[0-9a-f]{40}" + _E),
    TokenShape("replicate", "ml", ("r8_",), r"r8_", r"[A-Za-z0-9]{30,}" + _E),
    TokenShape("neptune", "ml", ("eyJhcGlfYWRkcmVzcyI6",), r"eyJ", r"hcGlfYWRkcmVzcyI6[\w+/=]+"),
    TokenShape("langsmith", "ml", ("lsv2_",), r"lsv2_(?:pt|sk)_", r"[0-9a-f]{32}_[0-9a-f]{10}"),
    TokenShape("pinecone", "ml", ("pcsk_",), r"pcsk_", r"[A-Za-z0-9_]{40,}" + _E),
    TokenShape("databricks", "ml", ("dapi",), r"dapi", r"[0-9a-f]{32}(?:-\d+)?" + _E),
    # --- LLM APIs --------------------------------------------------------------------
    TokenShape(
        "anthropic", "llm", ("sk-ant-",), r"sk-ant-(?:api|admin|oat|sid)\d\d-", r"[\w\-]{32,}"
    ),
    TokenShape(
        "openai-project", "llm", ("sk-",), r"sk-(?:proj|svcacct|admin|None)-", r"[\w\-]{20,}"
    ),
    TokenShape("openrouter", "llm", ("sk-or-",), r"sk-or-v1-", r"[0-9a-f]{64}" + _E),
    # Legacy OpenAI and look-alikes (DeepSeek, ...); a digit in the body keeps prose out.
    TokenShape("openai", "llm", ("sk-",), r"sk-", r"(?=[\w\-]*\d)[\w\-]{20,}", names_kept=True),
    TokenShape("groq", "llm", ("gsk_",), r"gsk_", r"[A-Za-z0-9]{40,}" + _E),
    TokenShape("xai", "llm", ("xai-",), r"xai-", r"[A-Za-z0-9]{60,}" + _E),
    TokenShape("nvidia", "llm", ("nvapi-",), r"nvapi-", r"[\w\-]{40,}"),
    TokenShape("perplexity", "llm", ("pplx-",), r"pplx-", r"[A-Za-z0-9]{40,}" + _E),
    TokenShape("tavily", "llm", ("tvly-",), r"tvly-(?:dev-|prod-)?", r"[A-Za-z0-9]{30,}" + _E),
    # --- chat bots and messaging ---------------------------------------------------------
    TokenShape("slack", "chat", ("xox",), r"xox[abposre]-", r"[A-Za-z0-9\-]{10,}"),
    TokenShape("slack-config", "chat", ("xoxe",), r"xoxe\.xox[bp]-", r"[\w\-]{20,}"),
    TokenShape("slack-app", "chat", ("xapp-",), r"xapp-", r"[A-Za-z0-9\-]{10,}"),
    TokenShape(
        "slack-webhook",
        "chat",
        ("hooks.slack.com",),
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/",
        r"[\w/\-]+",
    ),
    TokenShape(
        "discord-webhook",
        "chat",
        ("/api/webhooks/",),
        r"https?://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/",
        r"[\w/\-]+",
    ),
    TokenShape(
        "discord-bot",
        "chat",
        ("M", "N", "O"),
        r"",
        r"[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + _EW,
        "_-.",
    ),
    # `<bot id>:<35 characters starting with A>`
    TokenShape("telegram-bot", "chat", (":A",), r"", r"\d{5,16}:A[\w\-]{34}" + _EW, ":_-."),
    TokenShape(
        "teams-webhook",
        "chat",
        ("webhook.office.com",),
        r"https://[\w\-]+\.webhook\.office\.com/",
        r"[\w@/\-]+",
    ),
    TokenShape("twilio", "chat", ("SK",), r"SK", r"[0-9a-fA-F]{32}" + _E),
    TokenShape("sendgrid", "chat", ("SG.",), r"SG\.", r"[\w\-]{16,}\.[\w\-]{30,}"),
    TokenShape("mailgun", "chat", ("key-",), r"key-", r"[0-9a-f]{32}" + _E, "_-"),
    TokenShape("mailchimp", "chat", ("-us",), r"", r"[0-9a-f]{32}-us\d{1,2}" + _E, "_-"),
    # --- cloud -----------------------------------------------------------------------
    TokenShape(
        "aws-access-key-id",
        "cloud",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9]",
        r"[A-Z0-9]{16}" + _E,
    ),
    TokenShape("aws-bedrock", "cloud", ("ABSK",), r"ABSK", r"[A-Za-z0-9+/]{100,}={0,2}"),
    TokenShape("google-api-key", "cloud", ("AIza",), r"AIza", r"[\w\-]{35}(?![\w\-])"),
    TokenShape("google-oauth", "cloud", ("ya29.",), r"ya29\.", r"[\w\-]{20,}"),
    TokenShape("google-client-secret", "cloud", ("GOCSPX-",), r"GOCSPX-", r"[\w\-]{24,}"),
    TokenShape(
        "azure-ad-client-secret",
        "cloud",
        ("Q~",),
        r"",
        r"[\w~.]{3}\dQ~[\w~.\-]{31,34}(?![\w~.\-])",
        "_~.-",
    ),
    TokenShape("alibaba", "cloud", ("LTAI",), r"LTAI", r"[A-Za-z0-9]{20}" + _E),
    TokenShape("digitalocean", "cloud", ("_v1_",), r"do[opr]_v1_", r"[0-9a-f]{64}" + _E),
    TokenShape("heroku", "cloud", ("HRKU-",), r"HRKU-", r"[\w\-]{40,}"),
    TokenShape(
        "flyio", "cloud", ("fo1_", "fm1", "fm2_"), r"fo1_|fm1[ar]_|fm2_", r"[\w+/\-]{40,}={0,3}"
    ),
    TokenShape(
        "cloudflare-origin-ca", "cloud", ("v1.0-",), r"v1\.0-", r"[0-9a-f]{24}-[0-9a-f]{100,}"
    ),
    TokenShape("vault", "cloud", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.", r"[\w\-]{24,}"),
    TokenShape(
        "terraform-cloud", "cloud", (".atlasv1.",), r"", r"[A-Za-z0-9]{14}\.atlasv1\.[\w\-=]{60,}"
    ),
    TokenShape(
        "doppler", "cloud", ("dp.",), r"dp\.(?:pt|st|sa|ct|scim|audit)\.", r"[A-Za-z0-9]{40,}"
    ),
    TokenShape("pulumi", "cloud", ("pul-",), r"pul-", r"[0-9a-f]{40}" + _E),
    TokenShape("1password-service", "cloud", ("ops_eyJ",), r"ops_", r"eyJ[\w+/]{100,}={0,3}"),
    TokenShape(
        "1password-secret-key",
        "cloud",
        ("A3-",),
        r"A3-",
        r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    ),
    TokenShape("openshift", "cloud", ("sha256~",), r"sha256~", r"[\w\-]{43}" + _EW),
    TokenShape(
        "azure-storage",
        "cloud",
        ("AccountKey=", "SharedAccessKey="),
        r"(?:AccountKey|SharedAccessKey)=",
        r"[A-Za-z0-9+/%]{16,}=*",
    ),
    # `sig=` right after `?` or `&` (the match starts at `sig`, so the character before it
    # is the separator, never a letter of the previous parameter's value)
    TokenShape("azure-sas", "cloud", ("?sig=", "&sig="), r"sig=", r"[A-Za-z0-9%+/]{16,}=*"),
    # presigned URLs written without their scheme (a header, a shell variable)
    TokenShape(
        "aws-presigned",
        "cloud",
        ("X-Amz-Signature=", "X-Goog-Signature=", "X-Amz-Security-Token="),
        r"X-(?:Amz|Goog)-(?:Signature|Security-Token)=",
        r"[A-Za-z0-9%+/=_\-]{16,}",
    ),
    # --- CI and package registries ---------------------------------------------------------
    TokenShape("npm", "registry", ("npm_",), r"npm_", r"[A-Za-z0-9]{36,}" + _E),
    TokenShape(
        "pypi",
        "registry",
        ("pypi-",),
        r"pypi-",
        r"(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[\w\-]{40,}",
    ),
    TokenShape("docker-hub", "registry", ("dckr_",), r"dckr_(?:pat|oat)_", r"[\w\-]{20,}"),
    TokenShape("rubygems", "registry", ("rubygems_",), r"rubygems_", r"[0-9a-f]{48}" + _E),
    TokenShape("artifactory", "registry", ("AKCp",), r"AKCp", r"[A-Za-z0-9]{60,}" + _E),
    TokenShape("artifactory-reference", "registry", ("cmVmd",), r"cmVmd", r"[A-Za-z0-9]{59}" + _E),
    TokenShape("circleci", "ci", ("CCIPAT_",), r"CCIPAT_", r"[\w]{20,}"),
    TokenShape("buildkite", "ci", ("bkua_",), r"bkua_", r"[0-9a-f]{40}" + _E),
    TokenShape("sonarqube", "ci", ("sqp_", "squ_", "sqa_"), r"sq[pua]_", r"[0-9a-f]{40}" + _E),
    TokenShape(
        "harness",
        "ci",
        ("pat.", "sat."),
        r"(?:pat|sat)\.",
        r"[\w\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
    ),
    TokenShape("prefect", "ci", ("pnu_",), r"pnu_", r"[A-Za-z0-9]{36}" + _E),
    TokenShape("postman", "ci", ("PMAK-",), r"PMAK-", r"[0-9a-fA-F]{24}-[0-9a-fA-F]{34}"),
    TokenShape("linear", "ci", ("lin_api_",), r"lin_api_", r"[A-Za-z0-9]{40}" + _E),
    TokenShape("notion", "ci", ("ntn_",), r"ntn_", r"\d{11}[A-Za-z0-9]{35}" + _E),
    # --- databases ----------------------------------------------------------------------
    TokenShape("planetscale", "db", ("pscale_",), r"pscale_(?:tkn|oauth|pw)_", r"[\w=.\-]{32,}"),
    TokenShape("supabase", "db", ("sbp_",), r"sbp_", r"[0-9a-f]{40}" + _E),
    TokenShape("clickhouse", "db", ("4b1d",), r"4b1d", r"[A-Za-z0-9]{38}" + _E, "_-"),
    # --- observability -------------------------------------------------------------------
    TokenShape("sentry-user", "observability", ("sntryu_",), r"sntryu_", r"[0-9a-f]{64}" + _E),
    TokenShape("sentry-org", "observability", ("sntrys_",), r"sntrys_", r"eyJ[\w+/=]{40,}"),
    TokenShape("grafana-cloud", "observability", ("glc_",), r"glc_", r"[A-Za-z0-9+/]{32,}={0,3}"),
    TokenShape(
        "grafana-service-account",
        "observability",
        ("glsa_",),
        r"glsa_",
        r"[A-Za-z0-9]{32}_[0-9a-fA-F]{8}",
    ),
    TokenShape(
        "grafana-api-key", "observability", ("eyJrIjoi",), r"eyJrIjoi", r"[A-Za-z0-9]{60,}={0,3}"
    ),
    TokenShape(
        "new-relic",
        "observability",
        ("NRAK-", "NRII-", "NRJS-"),
        r"NR(?:AK|II|JS)-",
        r"[A-Za-z0-9\-]{19,}",
    ),
    TokenShape(
        "dynatrace", "observability", ("dt0c01.",), r"dt0c01\.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"
    ),
    # --- payments and commerce ------------------------------------------------------------
    TokenShape(
        "stripe",
        "other",
        ("_live_", "_test_"),
        r"(?:sk|rk|pk)_(?:live|test)_",
        r"[A-Za-z0-9]{16,}" + _E,
    ),
    TokenShape("stripe-webhook", "other", ("whsec_",), r"whsec_", r"[A-Za-z0-9]{24,}" + _E),
    TokenShape("shopify", "other", ("shp",), r"shp(?:at|ca|pa|ss)_", r"[0-9a-fA-F]{32}" + _E),
    # --- keys and generic forms --------------------------------------------------------------
    TokenShape(
        "age-secret-key",
        "other",
        ("AGE-SECRET-KEY-1",),
        r"AGE-SECRET-KEY-1",
        r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
    TokenShape("jwt", "other", ("eyJ",), r"eyJ", r"[\w\-]{10,}\.[\w\-]{10,}\.[\w\-]*", "_-"),
    TokenShape("bearer", "other", ("earer",), r"[Bb]earer\s+", r"[\w.~+/\-]{16,}=*", "_"),
    TokenShape(
        "authorization",
        "other",
        ("uthorization", "UTHORIZATION"),
        r"(?:[Aa]uthorization|AUTHORIZATION)[\"']?\s*[:=]\s*[\"']?(?:Basic|Token|token)\s+",
        r"[\w.~+/\-]{8,}=*",
    ),
)
