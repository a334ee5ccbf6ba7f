"""One card per concurrent training job: slots as flock'ed files, tested with fake cards and real
processes (no GPU needed: the slot logic never touches CUDA when the card ids are given)."""

import itertools
import multiprocessing as mp
import os
import signal
import time

import pytest

from crl_approx.training import gpu_slots


def _job(cards, folder, hold, out, together=None):
    """A training job's claim: take a slot, record (card, start, end), hold it, exit. With
    ``together`` (a barrier of len(cards) parties) a holder waits until every card is held, so
    that the test does not depend on how fast a loaded host starts the processes."""
    index, card, _fh = gpu_slots.claim(cards, folder, timeout=60, poll=0.01)
    start = time.monotonic()
    if together is not None:
        together.wait(timeout=60)
    time.sleep(hold)
    out.put((card, index, start, time.monotonic()))


def test_concurrent_jobs_never_share_a_card(tmp_path):
    cards = ["0", "1", "2"]
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    together = ctx.Barrier(len(cards))
    jobs = [ctx.Process(target=_job, args=(cards, tmp_path, 0.3, out, together)) for _ in range(9)]
    for p in jobs:
        p.start()
    records = [out.get(timeout=60) for _ in jobs]
    for p in jobs:
        p.join(timeout=10)
        assert p.exitcode == 0
    assert {card for card, *_ in records} == set(cards)  # every card was used
    for card in cards:
        spans = sorted((s, e) for c, _, s, e in records if c == card)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end, f"two jobs held card {card} at once"
    # at most len(cards) jobs ever ran at once, and more than one did (they were concurrent)
    events = sorted([(s, 1) for *_, s, _ in records] + [(e, -1) for *_, e in records])
    running, peak = 0, 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert 1 < peak <= len(cards)
    # the index is the card's position among the visible cards (torch's cuda:<index>)
    assert all(cards[index] == card for card, index, *_ in records)


def _hold_forever(cards, folder, ready):
    held = gpu_slots.claim(cards, folder, timeout=10, poll=0.01)  # the open file holds the lock
    ready.set()
    time.sleep(600)
    del held


def test_a_killed_job_frees_its_card(tmp_path):
    cards = ["7"]
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(cards, tmp_path, ready))
    holder.start()
    assert ready.wait(30)
    assert gpu_slots.try_claim(cards, tmp_path) is None  # held
    with pytest.raises(TimeoutError, match="no free GPU slot"):
        gpu_slots.claim(cards, tmp_path, timeout=0.2, poll=0.05)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(timeout=10)
    index, card, fh = gpu_slots.claim(cards, tmp_path, timeout=10, poll=0.01)
    assert (index, card) == (0, "7")
    assert (tmp_path / "gpu-7.lock").read_text().strip() == str(os.getpid())
    fh.close()


def test_visible_cards_follow_cuda_visible_devices(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5")
    assert gpu_slots.visible_cards() == ["3", "5"]
    monkeypatch.setenv("CRL_GPU_LOCK_DIR", str(tmp_path / "locks"))
    assert gpu_slots.lock_dir() == tmp_path / "locks"
