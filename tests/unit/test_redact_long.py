"""A text over 32 KB (a large patch) is redacted only on the lines that hold a hint, found
by a faster scan than the short path's: whatever it plants, the long path must give each
planted line exactly what redacting that line alone gives."""

from __future__ import annotations

import pytest

from expdna.manifest.redact import redact_text
from tests.unit.test_redact import CORPUS, LOOK_ALIKES
from tests.unit.test_redact_v3 import LOOK_ALIKES as V3_LOOK_ALIKES

HEX40 = "cd18fc9fb6494384932af3bda6fe8102c0fa7a26"

# Lines a large patch holds around its secrets: training code with the words the gate
# looks for used as words (`for key in keys`, `pass`), never as names of a secret.
PADDING = (
    "    for key in state_dict.keys():",
    "        pass",
    "    def forward(self, x: Tensor) -> Tensor:",
    "        return self.proj(x) * 0.5 + 1e-6",
    '    """Tokens are split on whitespace; a session is one epoch."""',
    "    optimizer.step()  # 10 steps of warmup, then 192 at full rate",
    "",
)

# Secret-named assignments, command forms and URLs as lines of code and config.
LINES = (
    f"export WANDB_API_KEY={HEX40}",
    f'WANDB = "{HEX40}"',
    "  db_password: 'Hunter22abcdef'",
    'os.environ["HF_TOKEN"] = "hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"',
    "python train.py --db-pw Hunter22abcdef --lr 3e-4",
    "RAY_REDIS_PW=Hunter22abcdef ray start --head",
    "curl -u bob:Hunter22abcdef api.example.com/v1",
    "SMTP_PASS=abc --pw x1",
    "sshpass -pHunter22 ssh h && redis-cli -a Hunter22 ping",
    "mysql -h db -u root -pHunter22abcdef app",
    f"wandb login {HEX40}",
    "docker login -u ci -p Hunter22abcdef registry.example.com",
    "amqp://worker:gu3st#Hunter22@mq.example.com:5672/jobs",
    "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sig=AbCdEf0123456789xyz",
    '"{\\"auths\\": {\\"reg.io\\": {\\"auth\\": \\"Y2ktYm90OlB6OHNLMnFMbTRSdA==\\"}}}"',
    "remember Q7xPz2mK9vLw4RtYb8NcJd3F for the mirror",
    "server 10.20.30.40 and host gpu-7.corp",
    "api_keys: [Hunter22abc, Other33xyz]",
    'creds = { user = "ci", value = "Hunter22abc" }',
)


def _planted(items: list[str], prefix: str) -> tuple[str, list[tuple[int, str]]]:
    """A text over 32 KB with each item between padding; each item's first line number."""
    lines: list[str] = []
    where = []
    per_item = max(1, 40 * 1024 // (len(items) * sum(len(p) + 1 for p in PADDING)) + 1)
    for item in items:
        for _ in range(per_item):
            lines.extend(prefix + p for p in PADDING)
        where.append((len(lines), item))
        lines.extend(prefix + line for line in item.split("\n"))
    lines.extend(prefix + p for p in PADDING)
    return "\n".join(lines), where


ITEMS = sorted({*(s.text for s in CORPUS), *LOOK_ALIKES, *V3_LOOK_ALIKES, *LINES, *PADDING} - {""})


@pytest.fixture(autouse=True)
def _home_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")


@pytest.mark.parametrize("prefix", ["", "+"])
def test_the_long_path_redacts_each_line_as_the_short_path_does(prefix: str) -> None:
    # one text for every item at once: the scan's cost is paid once
    text, where = _planted(ITEMS, prefix)
    if prefix:
        text = (
            "diff --git a/t.py b/t.py\nnew file mode 100644\n--- /dev/null\n+++ b/t.py\n"
            f"@@ -0,0 +1,{text.count(chr(10)) + 1} @@\n{text}"
        )
        where = [(at + 5, item) for at, item in where]
    assert len(text) > 32 * 1024
    out = redact_text(text).split("\n")
    wrong = []
    for at, item in where:
        n = item.count("\n") + 1
        alone = "\n".join(prefix + line for line in redact_text(item).split("\n"))
        got = "\n".join(out[at : at + n])
        if got != alone:
            wrong.append((item, alone, got))
    assert wrong == []
    padding = {prefix + p for p in PADDING}
    assert padding <= set(out)  # the words of secret names, used as words, are kept
