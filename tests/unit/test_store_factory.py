"""The synthetic manifests of tests/factories.py are what the store tests take them for."""

from __future__ import annotations

from expdna.store.record.flatten import flatten
from tests.factories import synthetic


def test_same_setup_same_dna_other_setup_other_dna() -> None:
    a, b, c = synthetic(1, setup=7), synthetic(2, setup=7), synthetic(3, setup=8)
    assert a.dna is not None and b.dna is not None and c.dna is not None
    assert a.run_id != b.run_id
    assert a.dna.value == b.dna.value != c.dna.value


def test_about_eighty_leaves() -> None:
    facts, metrics = flatten(synthetic(1).to_dict())
    assert 70 <= len(facts) <= 100
    assert metrics == {"final_loss": 0.5, "reward.mean": 0.5}
