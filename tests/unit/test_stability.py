"""Stability: the statistics (pure), which sections an ignore touches, and the query over a
real SQLite store."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from expdna.errors import InvalidInputError
from expdna.manifest.model import DNA_SECTIONS
from expdna.store import Store
from expdna.store.errors import AmbiguousPrefixError, InvalidRunRefError, RunNotFoundError
from expdna.store.stability import (
    check_ignore,
    recomputed_dna,
    stability,
    summarise,
    summarise_rows,
    touched_sections,
)
from tests.factories import SEED_PATHS, collide_prefix, dna, manifest_of, record_docs, seed_doc

# -- statistics ----------------------------------------------------------------------


def test_three_repeats_mean_sample_std_and_cv() -> None:
    stats = summarise([0.1, 0.2, 0.3])
    assert stats is not None
    assert stats.n == 3
    assert stats.mean == 0.2
    assert stats.std == pytest.approx(0.1)  # sample (n - 1): the population std is 0.0816
    assert (stats.min, stats.max) == (0.1, 0.3)
    assert stats.cv == pytest.approx(0.5)
    assert stats.to_dict().keys() == {"n", "mean", "std", "min", "max", "cv"}


def test_no_values_is_no_summary_and_one_value_has_no_spread() -> None:
    assert summarise([]) is None
    one = summarise([0.7])
    assert one is not None
    assert (one.n, one.mean, one.std, one.min, one.max, one.cv) == (1, 0.7, None, 0.7, 0.7, None)


def test_cv_is_none_for_a_zero_mean_and_positive_for_a_negative_one() -> None:
    around_zero = summarise([-1.0, 1.0])
    assert around_zero is not None
    assert around_zero.mean == 0 and around_zero.std == pytest.approx(math.sqrt(2))
    assert around_zero.cv is None
    negative = summarise([-0.1, -0.2, -0.3])
    assert negative is not None and negative.cv == pytest.approx(0.5)
    equal = summarise([2.0, 2.0])
    assert equal is not None and equal.std == 0.0 and equal.cv == 0.0


def test_rows_grouped_by_metric_in_the_asked_order() -> None:
    rows = [
        ("a", "val_loss", 0.1),
        ("b", "val_loss", 0.3),
        ("a", "acc", 0.9),
        ("c", "acc", float("nan")),
        ("b", "acc", 0.7),
    ]
    every = summarise_rows(rows)
    assert list(every) == ["acc", "val_loss"]  # sorted by default
    assert every["acc"].n == 2  # the NaN is not a value
    asked = summarise_rows(rows, ["val_loss", "nope", "acc", "val_loss"])
    assert list(asked) == ["val_loss", "acc"]  # nope: nobody reported it
    assert asked["val_loss"].mean == pytest.approx(0.2)


# -- ignore patterns -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "sections"),
    [
        ("config.resolved_args.seed", {"config"}),
        ("training.seeds.*", {"training"}),
        ("config.resolved_args.*seed", {"config"}),
        ("*.seed", set(DNA_SECTIONS)),
        ("c*", {"code", "config"}),
        ("con?ig.resolved_args.seed", {"config"}),
        ("[ct]raining.seeds.seed", set(DNA_SECTIONS)),
        ("metrics.val_loss", set()),
        ("config", set()),  # a member path always has a dot after the section
        ("", set()),
    ],
)
def test_touched_sections(pattern: str, sections: set[str]) -> None:
    assert touched_sections(pattern) == sections


def test_check_ignore_refuses_paths_outside_the_dna_and_dedupes() -> None:
    assert check_ignore([*SEED_PATHS, SEED_PATHS[0]]) == list(SEED_PATHS)
    for bad in ("metrics.val_loss", "command.argv", "config", "", " config.x"):
        with pytest.raises(InvalidInputError, match="not a dotted path inside a DNA section"):
            check_ignore([bad])


def test_recomputed_dna_adds_to_the_manifests_own_ignores() -> None:
    doc = seed_doc(1, seed=5)
    doc["config"]["dna_ignore"] = ["config.resolved_args.global_batch_size"]
    manifest = manifest_of(doc)
    stored = manifest.to_dict()
    assert manifest.dna is not None
    assert recomputed_dna(stored, []) == manifest.dna.value
    other_seed = seed_doc(1, seed=6)
    other_seed["config"]["dna_ignore"] = ["config.resolved_args.global_batch_size"]
    other = manifest_of(other_seed).to_dict()
    assert recomputed_dna(stored, SEED_PATHS) == recomputed_dna(other, SEED_PATHS)
    # The seed argument alone pools too: the training field derived from it goes with it.
    assert SEED_PATHS[0] == "config.resolved_args.seed"
    assert recomputed_dna(stored, SEED_PATHS[:1]) == recomputed_dna(other, SEED_PATHS[:1])
    # The training field alone does not: the argument still differs.
    assert recomputed_dna(stored, SEED_PATHS[1:]) != recomputed_dna(other, SEED_PATHS[1:])
    assert stored["config"]["dna_ignore"] == ["config.resolved_args.global_batch_size"]


# -- the query over a real store -----------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "store") as opened:
        yield opened


def test_runs_of_one_dna(store: Store) -> None:
    a, b, c, _ = record_docs(
        store,
        seed_doc(1, val_loss=0.1, acc=0.5),
        seed_doc(2, val_loss=0.2),
        seed_doc(3, val_loss=0.3),
        seed_doc(4, seed=9, val_loss=5.0),
    )
    report = stability(store, dna(a)[:8])
    assert report.dna == dna(a) == dna(b) == dna(c)
    assert report.runs == [a.run_id, b.run_id, c.run_id]  # oldest first
    assert report.dnas == [dna(a)] and report.ignored == []
    assert list(report.metrics) == ["acc", "val_loss"]
    assert report.metrics["acc"].n == 1
    loss = report.metrics["val_loss"]
    assert (loss.n, loss.mean, loss.min, loss.max) == (3, 0.2, 0.1, 0.3)
    assert loss.std == pytest.approx(0.1) and loss.cv == pytest.approx(0.5)
    assert report.to_dict()["runs"] == report.runs
    # A run id names its DNA's group as well.
    assert stability(store, b.run_id, metrics=["val_loss"]).runs == report.runs


def test_requested_metrics_only_and_missing_ones_named(store: Store) -> None:
    a, _ = record_docs(store, seed_doc(1, val_loss=0.1, acc=0.5), seed_doc(2, val_loss=0.2))
    report = stability(store, dna(a)[:6], metrics=["val_loss", "bleu"])
    assert list(report.metrics) == ["val_loss"] and report.missing == ["bleu"]
    none = stability(store, dna(a)[:6], metrics=["bleu"])
    assert none.metrics == {} and none.runs and none.missing == ["bleu"]


def test_seed_repeats_pool_when_the_seed_argument_is_ignored(store: Store) -> None:
    s1, s2, s3, other = record_docs(
        store,
        seed_doc(1, seed=1, val_loss=0.1),
        seed_doc(2, seed=2, val_loss=0.2),
        seed_doc(3, seed=3, val_loss=0.3),
        seed_doc(4, seed=4, driver="550.54.15", val_loss=9.0),
    )
    assert len({dna(s1), dna(s2), dna(s3)}) == 3
    alone = stability(store, dna(s2)[:10], metrics=["val_loss"])
    assert alone.runs == [s2.run_id]
    assert alone.metrics["val_loss"].std is None
    # The training collector copies the seed to training.seeds.seed: that path alone is
    # not enough (in DNA version 3 it removes nothing: the training section is out of the
    # DNA), while the argument's path takes the command's seed word with it.
    half = stability(store, dna(s2)[:10], ignore=[SEED_PATHS[1]])
    assert half.runs == [s2.run_id] and half.unmatched == [SEED_PATHS[1]]
    by_argument = stability(store, dna(s2)[:10], ignore=[SEED_PATHS[0]])
    assert by_argument.runs == [s1.run_id, s2.run_id, s3.run_id]
    both = stability(store, dna(s2)[:10], ignore=SEED_PATHS, metrics=["val_loss"])
    assert both.dna == dna(s2)
    assert both.runs == [s1.run_id, s2.run_id, s3.run_id]  # not the other driver's run
    assert both.dnas[0] == dna(s2) and set(both.dnas) == {dna(s1), dna(s2), dna(s3)}
    assert both.ignored == list(SEED_PATHS)
    assert both.metrics["val_loss"].mean == pytest.approx(0.2)
    assert both.metrics["val_loss"].cv == pytest.approx(0.5)
    # A glob over every section finds the same group (every run is a candidate then).
    assert stability(store, dna(s2)[:10], ignore=["*.seed"]).runs == both.runs
    assert other.run_id not in stability(store, dna(s2)[:10], ignore=["*.seed"]).runs


def test_runs_differing_in_an_untouched_section_are_never_read(store: Store) -> None:
    s1, s2, other = record_docs(
        store,
        seed_doc(1, seed=1, val_loss=0.1),
        seed_doc(2, seed=2, val_loss=0.2),
        seed_doc(3, seed=3, driver="550.54.15", val_loss=9.0),
    )
    # Another hardware digest: not a candidate under config/training ignores, so its
    # manifest must not be opened. Removing it proves it is not.
    store.objects.path(store.get(other.run_id).manifest_digest).unlink()
    report = stability(store, dna(s1)[:10], ignore=SEED_PATHS)
    assert report.runs == [s1.run_id, s2.run_id]


def test_one_manifest_is_read_per_candidate_dna(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    s1, s1_again, s2, s3 = record_docs(
        store,
        seed_doc(1, seed=1, val_loss=0.1),
        seed_doc(2, seed=1, val_loss=0.2),
        seed_doc(3, seed=2, val_loss=0.3),
        seed_doc(4, seed=2, val_loss=0.4),
    )
    read = store.objects.read_verified
    digests: list[str] = []

    def counted(digest: str) -> bytes:
        digests.append(digest)
        return read(digest)

    monkeypatch.setattr(store.objects, "read_verified", counted)
    report = stability(store, dna(s2)[:10], ignore=SEED_PATHS, metrics=["val_loss"])
    assert sorted(report.runs) == sorted(m.run_id for m in (s1, s1_again, s2, s3))
    assert report.metrics["val_loss"].n == 4
    # Two DNAs, four runs: two manifests read (the target's, then the other DNA's).
    assert len(digests) == 2


def test_an_ignore_that_removes_nothing_is_reported(store: Store) -> None:
    (a,) = record_docs(store, seed_doc(1, val_loss=0.1))
    report = stability(store, dna(a)[:8], ignore=["config.resolved_args.sede", SEED_PATHS[0]])
    assert report.unmatched == ["config.resolved_args.sede"]
    assert report.runs == [a.run_id]


def test_bad_references(store: Store) -> None:
    a, b = record_docs(store, seed_doc(1, seed=1, val_loss=0.1), seed_doc(2, seed=2, val_loss=0.2))
    with pytest.raises(RunNotFoundError):
        stability(store, "0" * 12 if not dna(a).startswith("0" * 12) else "f" * 12)
    with pytest.raises(InvalidRunRefError):
        stability(store, "abc")
    with pytest.raises(InvalidInputError, match="--ignore"):
        stability(store, dna(a)[:8], ignore=["metrics.val_loss"])
    crafted = collide_prefix(store, b.run_id, dna(a))
    with pytest.raises(AmbiguousPrefixError) as caught:
        stability(store, dna(a)[:6])
    assert caught.value.exit_code == 2
    assert sorted(caught.value.candidates) == sorted([dna(a)[:12], crafted[:12]])


def test_a_deviation_past_the_double_range_is_undefined_not_a_crash() -> None:
    # the sample deviation of these is 2.4e308: statistics.stdev raises rounding it
    stats = summarise([1.7e308, -1.7e308, 1.7e308])
    assert stats is not None and stats.std is None and stats.cv is None
    assert stats.mean == pytest.approx(1.7e308 / 3) and stats.max == 1.7e308
