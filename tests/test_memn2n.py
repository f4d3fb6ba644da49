"""MemN2N against its equations written out, its invariants, its errors, training and the command line."""

import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attn.data.babi import build_vocab, examples, parse_stories, vectorize
from attn.data.babi_world import simulate, write_task
from attn.memn2n import (
    MemN2N,
    MemN2NConfig,
    evaluate,
    memory_read,
    position_encoding,
    split_valid,
    support_attention,
    time_index,
    train_memn2n,
)
from attn.memn2n.__main__ import TaskResult, find_reference, main, parse_tasks, pick, read_reference
from attn.training import seeded


def make(seed=0, **kw):
    config = dict(vocab_size=12, d=8, hops=3, memory_size=6) | kw
    with seeded(seed):
        return MemN2N(MemN2NConfig(**config))


def random_batch(B=4, M=6, J=5, V=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, M + 1, (B,), generator=g)
    words = torch.randint(1, V, (B, M, J), generator=g)
    word_len = torch.randint(1, J + 1, (B, M), generator=g)
    story = words * (torch.arange(J) < word_len.unsqueeze(-1)) * (torch.arange(M) < lengths.unsqueeze(-1)).unsqueeze(-1)
    query = torch.randint(1, V, (B, J), generator=g) * (torch.arange(J) < 3)
    return story, query, lengths


def test_position_encoding_is_the_papers_formula():
    lengths = torch.tensor([4, 2])
    pe = position_encoding(lengths, J=5, d=3)
    for s, J in enumerate(lengths.tolist()):
        for j in range(1, 6):
            for k in range(1, 4):
                expected = 1 + 4 * (k - 2) * (j - (J + 1) / 2) / (3 * J) if j <= J else 0.0
                assert math.isclose(pe[s, j - 1, k - 1].item(), expected, abs_tol=1e-6)


def test_memory_read_matches_torch_sdpa_and_linear_drops_the_softmax():
    g = torch.Generator().manual_seed(1)
    u, m, c = torch.randn(3, 5, generator=g), torch.randn(3, 4, 5, generator=g), torch.randn(3, 4, 5, generator=g)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    o, p = memory_read(u, m, c, mask)
    ref = F.scaled_dot_product_attention(u[:, None], m, c, attn_mask=mask[:, None], scale=1.0)[:, 0]
    assert torch.allclose(o, ref, atol=1e-6)
    assert torch.allclose(p.sum(-1), torch.ones(3)) and (p[~mask] == 0).all()
    o_lin, p_lin = memory_read(u, m, c, mask, linear=True)
    scores = torch.einsum("bd,bmd->bm", u, m) * mask
    assert torch.equal(p_lin, scores) and torch.allclose(o_lin, torch.einsum("bm,bmd->bd", scores, c), atol=1e-6)


def reference_forward(model, story, query, lengths):
    """Eqs. 1-5 with untied names, one example at a time, loops instead of batching; layer-wise tying as §2.2
    writes it: A^k = A, C^k = C for every hop and u^{k+1} = H u^k + o^k."""
    cfg, K = model.config, model.config.hops
    layerwise = cfg.tying == "layerwise"
    if layerwise:
        A, C = [model.E[1].weight] * K, [model.E[2].weight] * K
        T_A, T_C = [model.T[0].weight] * K, [model.T[1].weight] * K
        B_, W = model.E[0].weight, model.E[3].weight
    else:
        A = [model.E[k].weight for k in range(K)]  # A^{k+1} = C^k
        C = [model.E[k + 1].weight for k in range(K)]
        T_A, T_C = [model.T[k].weight for k in range(K)], [model.T[k + 1].weight for k in range(K)]
        B_, W = model.E[0].weight, model.E[K].weight
    out_logits, out_att = [], []
    for b in range(story.shape[0]):
        n = int(lengths[b])

        def embed(table, words):
            J = int((words != 0).sum())
            vec = torch.zeros(cfg.d)
            for j, w in enumerate(words.tolist(), start=1):
                if w:
                    lj = torch.tensor(
                        [1 + 4 * (k - (cfg.d + 1) / 2) * (j - (J + 1) / 2) / (cfg.d * J) for k in range(1, cfg.d + 1)]
                    )
                    vec = vec + lj * table[w]
            return vec

        u = embed(B_, query[b])
        hops = []
        for k in range(K):
            m = torch.stack([embed(A[k], story[b, i]) + T_A[k][n - 1 - i] for i in range(n)])
            c = torch.stack([embed(C[k], story[b, i]) + T_C[k][n - 1 - i] for i in range(n)])
            p = torch.softmax(m @ u, 0)
            u = (model.H.weight @ u if layerwise else u) + p @ c
            hops.append(F.pad(p, (0, story.shape[1] - n)))
        out_logits.append((W @ u).index_fill(0, torch.tensor([0]), float("-inf")))  # the null word
        out_att.append(torch.stack(hops))
    return torch.stack(out_logits), torch.stack(out_att)


def test_forward_matches_the_equations_written_out():
    model = make()
    story, query, lengths = random_batch()
    out = model(story, query, lengths)
    logits, attention = reference_forward(model, story, query, lengths)
    assert torch.allclose(out.logits, logits, atol=1e-5)
    assert torch.allclose(out.hop_attention, attention, atol=1e-6)
    assert out.hop_attention.shape == (4, 3, 6)


@pytest.mark.parametrize("hops", [1, 3])
def test_layerwise_tying_matches_the_equations_written_out(hops):
    model = make(tying="layerwise", hops=hops, seed=1)
    story, query, lengths = random_batch(seed=2)
    out = model(story, query, lengths)
    logits, attention = reference_forward(model, story, query, lengths)
    assert torch.allclose(out.logits, logits, atol=1e-5)
    assert torch.allclose(out.hop_attention, attention, atol=1e-6)


def test_layerwise_tying_has_four_tables_two_temporal_and_h_whatever_the_hops():
    V, d, M = 12, 8, 6
    for hops in (1, 3, 5):
        model = make(tying="layerwise", hops=hops)
        assert len(model.E) == 4 and len(model.T) == 2 and tuple(model.H.weight.shape) == (d, d)
        assert sum(p.numel() for p in model.parameters()) == 4 * V * d + 2 * M * d + d * d
    story, query, lengths = random_batch()
    F.cross_entropy(make(tying="layerwise")(story, query, lengths).logits, torch.arange(4)).backward()
    with pytest.raises(ValueError, match="tying must be one of"):
        MemN2NConfig(12, tying="rnn")


def test_layerwise_tying_trains_on_task_1():
    train = examples(simulate(1, 300, seed=1))
    run = train_memn2n(train, epochs=8, linear_start=4, decay_every=4, progress=False, tying="layerwise", d=12)
    untrained = make(seed=0, vocab_size=len(run.vocab), d=12, memory_size=run.model.config.memory_size)
    test = examples(simulate(1, 200, seed=2))
    assert run.model.config.tying == "layerwise"
    assert run.error(test) < evaluate(untrained, run.tensors(test))["error"] - 0.2


def test_adjacent_tying_has_k_plus_one_tables_and_a_fixed_null_word():
    model = make(hops=3)
    V, d, M = 12, 8, 6
    assert sum(p.numel() for p in model.parameters()) == 4 * V * d + 4 * M * d
    assert all((table.weight[0] == 0).all() for table in model.E)
    story, query, lengths = random_batch()
    F.cross_entropy(model(story, query, lengths).logits, torch.arange(4)).backward()
    assert all((table.weight.grad[0] == 0).all() for table in model.E)


@given(seed=st.integers(0, 10_000), hops=st.integers(1, 3), linear=st.booleans())
def test_hop_attention_rows_sum_to_one_and_padded_memories_get_zero(seed, hops, linear):
    model = make(seed=seed % 3, hops=hops)
    story, query, lengths = random_batch(seed=seed)
    att = model(story, query, lengths, linear=linear).hop_attention
    padded = torch.arange(6) >= lengths.unsqueeze(-1)  # (B, M)
    assert (att.masked_select(padded.unsqueeze(1)) == 0).all()
    if not linear:
        assert torch.allclose(att.sum(-1), torch.ones_like(att.sum(-1)), atol=1e-5)


@given(seed=st.integers(0, 10_000))
def test_without_time_the_memory_is_a_set(seed):
    model = make(temporal=False, encoding="bow")
    story, query, lengths = random_batch(seed=seed)
    story, lengths = story[:, :], torch.full_like(lengths, 6)
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(seed))
    a, b = model(story, query, lengths), model(story[:, perm], query, lengths)
    assert torch.allclose(a.logits, b.logits, atol=1e-5)
    assert torch.allclose(a.hop_attention[..., perm], b.hop_attention, atol=1e-6)


def test_a_story_alone_equals_the_story_in_a_padded_batch():
    model = make()
    story, query, lengths = random_batch()
    full = model(story, query, lengths)
    for b in range(4):
        n = int(lengths[b])
        alone = model(story[b : b + 1, :n], query[b : b + 1], lengths[b : b + 1])
        assert torch.allclose(alone.logits, full.logits[b : b + 1], atol=1e-5)
        assert torch.allclose(alone.hop_attention, full.hop_attention[b : b + 1, :, :n], atol=1e-6)


def test_attended_empty_slots_score_zero_and_read_nothing():
    """``attend_empty=True`` (the authors' code): every story fills the memory_size slots, the empty ones zero
    vectors inside the softmax; how much a batch is padded changes nothing."""
    story, query, lengths = random_batch()
    masked, open_ = make(), make(attend_empty=True)
    full = torch.full_like(lengths, 6)
    assert torch.equal(masked(story, query, full).logits, open_(story, query, full).logits)  # no empty slot
    out = open_(story, query, lengths)
    assert torch.allclose(out.hop_attention.sum(-1), torch.ones(4, 3), atol=1e-5)  # 6 slots: none beyond the batch
    for b in range(4):
        n = int(lengths[b])
        if n < 6:  # every empty slot: score 0, so weight exp(0) / Z, the same for all of them
            empty = out.hop_attention[b, :, n:]
            assert (empty > 0).all() and torch.allclose(empty, empty[:, :1].expand_as(empty))
        alone = open_(story[b : b + 1, :n], query[b : b + 1], lengths[b : b + 1])
        assert torch.allclose(alone.logits[:, 1:], out.logits[b : b + 1, 1:], atol=1e-5)
        assert torch.allclose(alone.hop_attention, out.hop_attention[b : b + 1, :, :n], atol=1e-6)
        assert (alone.hop_attention.sum(-1) <= 1 + 1e-6).all()
    assert not torch.allclose(out.logits[:, 1:], masked(story, query, lengths).logits[:, 1:])


def test_time_index_counts_back_from_the_newest_and_noise_keeps_the_order():
    lengths = torch.tensor([3, 5])
    assert time_index(lengths, 5).tolist() == [[2, 1, 0, 0, 0], [4, 3, 2, 1, 0]]
    g = torch.Generator().manual_seed(0)
    noisy = time_index(torch.full((200,), 20), 20, noise=0.1, generator=g)
    assert (noisy[:, :-1] > noisy[:, 1:]).all()  # still oldest -> newest
    extra = noisy[:, 0] - 19
    assert extra.min() >= 0 and 1.0 < extra.float().mean() < 3.0  # about 10 % of 20 empty memories


def test_bad_inputs_and_configs_name_the_argument():
    model = make()
    story, query, lengths = random_batch()
    with pytest.raises(ValueError, match="story must be a 3-d long tensor, got torch.float32"):
        model(story.float(), query, lengths)
    with pytest.raises(ValueError, match=r"share the batch size, got story \(4, 6, 5\), query \(3, 5\)"):
        model(story, query[:3], lengths)
    with pytest.raises(ValueError, match="story has 7 memory slots but the model keeps at most memory_size=6"):
        model(torch.ones(4, 7, 5, dtype=torch.long), query, lengths)
    with pytest.raises(ValueError, match=r"query has word ids outside \[0, 12\): min 1, max 12"):
        model(story, query.clamp_min(1) * 0 + 12 - (torch.arange(5) > 0).long() * 11, lengths)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 6\]"):
        model(story, query, lengths + 6)
    with pytest.raises(ValueError, match="encoding must be one of"):
        MemN2NConfig(10, encoding="lstm")
    with pytest.raises(ValueError, match="hops must be a positive int, got 0"):
        MemN2NConfig(10, hops=0)


def test_an_empty_memory_gives_zero_attention_not_nan():
    model = make()
    story, query, _ = random_batch()
    out = model(story, query, torch.zeros(4, dtype=torch.long))
    assert (out.hop_attention == 0).all() and torch.isfinite(out.logits[:, 1:]).all()  # logit 0: the null word


def test_vectorised_real_format_runs_through_the_model():
    stories = parse_stories(
        ["1 Mary moved to the bathroom.", "2 John went to the hallway.", "3 Where is Mary?\tbathroom\t1"]
    )
    exs = examples(stories)
    vocab = build_vocab(exs)
    t = vectorize(exs, vocab)
    model = make(vocab_size=len(vocab), memory_size=50)
    out = model(t.story, t.query, t.lengths)
    assert out.logits.shape == (1, len(vocab)) and out.hop_attention.shape == (1, 3, 2)


# ---- training, answering and the command line ----


SHARED = Path(__file__).resolve().parents[2] / "shared"
FAST = dict(linear_start=5, epochs=15, decay_every=5, progress=False)


@pytest.fixture(scope="module")
def task1():
    return examples(simulate(1, 600, seed=11)), examples(simulate(1, 300, seed=12))


@pytest.fixture(scope="module")
def trained(task1):
    return train_memn2n(task1[0], seed=0, **FAST)


def test_a_small_model_learns_simulated_task_1_in_seconds(trained, task1):
    assert trained.error(task1[1]) <= 0.05
    assert trained.history.seconds < 60


def test_training_is_seeded_and_keeps_the_best_validation_epoch(task1, trained):
    again = train_memn2n(task1[0], seed=0, **FAST)
    assert [e["train_loss"] for e in again.history.checkpoints] == [
        e["train_loss"] for e in trained.history.checkpoints
    ]
    weights, expected = again.model.state_dict(), trained.model.state_dict()
    assert all(torch.equal(weights[name], expected[name]) for name in expected)
    epochs = trained.history.checkpoints
    assert [e["phase"] for e in epochs] == ["linear"] * 5 + ["softmax"] * 15
    assert [e["lr"] for e in epochs[5:]] == [0.01] * 5 + [0.005] * 5 + [0.0025] * 5
    best = trained.history.kept
    assert best["phase"] == "softmax"
    assert best["valid_error"] == min(e["valid_error"] for e in epochs if e["phase"] == "softmax")
    _, valid = split_valid(task1[0], seed=0)
    assert trained.error(valid) == pytest.approx(best["valid_error"])  # the kept weights are that epoch's
    assert trained.valid_error == best["valid_error"]


def test_split_valid_holds_out_a_tenth(task1):
    train, valid = split_valid(task1[0], seed=3)
    assert len(valid) == 60 and len(train) == 540 and not set(map(id, train)) & set(map(id, valid))
    assert split_valid(task1[0], seed=3) == (train, valid)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\), got 1.5"):
        split_valid(task1[0], 1.5)


def test_answer_reads_a_typed_story(trained):
    answer = trained.answer(
        ["Mary moved to the kitchen.", "Zorg flew to the moon.", "Mary went to the garden."], "Where is Mary?"
    )
    assert answer.answer == "garden" and 0 < answer.probability <= 1
    assert answer.sentences[0] == "mary moved to the kitchen" and answer.unknown == ["flew", "moon", "zorg"]
    assert answer.hop_attention.shape == (3, 3)
    with pytest.raises(ValueError, match="the story has no words"):
        trained.answer(["...", ""], "Where is Mary?")
    with pytest.raises(ValueError, match="the question '\\?' has no words"):
        trained.answer(["Mary left."], "?")


def test_read_marks_supporting_sentences(trained, task1):
    ex = task1[1][0]
    read = trained.read(ex)
    assert [read.sentences[i] for i in read.supporting] == [" ".join(ex.story[i]) for i in ex.supporting_positions()]


def test_support_attention_averages_the_mass_on_supporting_slots():
    att = torch.tensor([[[0.2, 0.5, 0.3]], [[1.0, 0.0, 0.0]]])  # (N=2, K=1, M=3)
    supporting = torch.tensor([[1, 2], [0, -1]])
    assert torch.allclose(support_attention(att, supporting), torch.tensor([(0.8 + 1.0) / 2]))
    with pytest.raises(ValueError, match=r"supporting must be \(N=2, S\), got \(3, 2\)"):
        support_attention(att, torch.zeros(3, 2, dtype=torch.long))


def test_python_m_runs_the_table_in_spawned_workers(tmp_path):
    """As a reader types it: ``python -m`` makes the module ``__main__``, which a spawned worker never imports."""
    write_task(tmp_path, 1, n_train=100, n_test=50, seed=0)
    command = [sys.executable, "-m", "attn.memn2n", "table", "--data", str(tmp_path), "--tasks", "1", "--epochs", "1"]
    done = subprocess.run([*command, "--jobs", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert any(line.startswith("| 1 | single-supporting-fact |") for line in done.stdout.splitlines()), done.stdout


def test_command_line_trains_and_prints_the_table(tmp_path, capsys):
    write_task(tmp_path, 1, n_train=200, n_test=100, seed=0)
    reference = tmp_path / "paper.csv"
    reference.write_text("task,name,PE_LS_RN\n1,1 supporting fact,0.0\n")
    assert (
        main(
            [
                "table",
                "--data",
                str(tmp_path),
                "--tasks",
                "1",
                "--epochs",
                "2",
                "--jobs",
                "1",
                "--reference",
                str(reference),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| 1 |")).split("|")
    assert row[2].strip() == "single-supporting-fact" and 0 <= float(row[3]) <= 100  # our test error
    assert row[4].strip() == "0.0"  # the reference column
    assert "| mean |" in out and "failed tasks (error > 5 %):" in out and "training time:" in out
    assert "one run per task" in out
    assert main(["table", "--data", str(tmp_path), "--tasks", "1", "--epochs", "2", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "lowest train error (the paper's rule) % | lowest valid error % | median %" in out
    assert "2 seeds per task" in out and "(no reference CSV found" in out
    row = next(line for line in out.splitlines() if line.startswith("| 1 |")).split("|")
    assert all(0 <= float(row[i]) <= 100 for i in (3, 4, 5)) and row[7].strip() in {"0, 0", "0, 1", "1, 0", "1, 1"}
    joint = ["joint", "--data", str(tmp_path), "--tasks", "1", "--epochs", "1", "--linear-start", "1", "--dim", "8"]
    assert main([*joint, "--reference", str(reference)]) == 1  # a data error: one line, status 1
    assert "paper.csv:1: expected columns 'task' and 'PE_LS_RN_joint'" in capsys.readouterr().err
    reference.write_text("task,name,PE_LS_RN_joint\n1,1 supporting fact,0.5\n")
    assert main([*joint, "--reference", str(reference), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| 1 |")).split("|")
    assert "paper PE LS RN joint %" in out and row[4].strip() == "0.5" and 0 <= float(row[3]) <= 100
    assert main(["train", "--data", str(tmp_path), "--task", "1", "--epochs", "2"]) == 0
    assert "task 1 (single-supporting-fact): test error" in capsys.readouterr().out


def test_command_line_rejects_bad_arguments(tmp_path, capsys):
    assert parse_tasks("1-3,16") == [1, 2, 3, 16]
    for bad in ["0", "1-21", "a"]:
        with pytest.raises(Exception, match="tasks must"):
            parse_tasks(bad)
    with pytest.raises(SystemExit):
        main(["table", "--data", str(tmp_path / "missing")])
    assert "is not a folder" in capsys.readouterr().err
    for flag, value in [("--epochs", "0"), ("--dim", "-3"), ("--runs", "0"), ("--lr", "nan")]:
        with pytest.raises(SystemExit):
            main(["table", "--data", str(tmp_path), flag, value])
        assert f"argument {flag}: expected" in capsys.readouterr().err
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="expected columns 'task' and 'PE_LS_RN'"):
        read_reference(tmp_path / "bad.csv")


@pytest.mark.skipif(not (SHARED / "reference").is_dir(), reason=f"the paper's tables are not at {SHARED / 'reference'}")
def test_the_papers_column_is_found_and_read():
    path = find_reference(SHARED / "babi" / "en")
    paper = read_reference(path)
    assert sorted(paper) == list(range(1, 21))
    assert round(sum(paper.values()) / 20, 1) == 13.9  # the paper's mean for PE LS RN, 1k
    assert sum(e > 5 for e in paper.values()) == 11


def test_pick_keeps_the_lowest_validation_or_training_error_never_the_test_error():
    runs = [
        TaskResult(1, "t", test_error=0.0, valid_error=0.2, valid_loss=0.1, best_epoch=5, seconds=2.0, seed=0),
        TaskResult(1, "t", test_error=0.5, valid_error=0.1, valid_loss=0.9, best_epoch=7, seconds=3.0, seed=1),
        TaskResult(1, "t", test_error=0.4, valid_error=0.1, valid_loss=0.3, best_epoch=9, seconds=4.0, seed=2),
    ]
    kept = pick(runs)
    assert (kept.seed, kept.test_error, kept.seconds, kept.runs) == (2, 0.4, 9.0, 3)
    scores = zip((0.0, 0.0, 0.1), (0.3, 0.2, 0.0), strict=True)
    runs = [replace(r, train_error=e, train_loss=loss) for r, (e, loss) in zip(runs, scores, strict=True)]
    assert pick(runs, "train").seed == 1  # the paper's rule: lowest training error, then loss
    with pytest.raises(ValueError, match=r"by must be one of \['train', 'valid'\], got 'test'"):
        pick(runs, "test")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "epochs must be a positive int, got 0"),
        ({"linear_start": -1}, "linear_start must be an int >= 0, got -1"),
        ({"batch_size": 0}, "batch_size must be a positive int, got 0"),
        ({"noise": 1.5}, r"noise must be a number in \[0, 1\), got 1.5"),
        ({"lr": 0.0}, "lr must be a positive finite number, got 0.0"),
        ({"max_grad_norm": -1.0}, "max_grad_norm must be a positive finite number, got -1.0"),
    ],
)
def test_a_bad_recipe_is_refused_before_training(task1, kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_memn2n(task1[0], progress=False, **kwargs)


def test_recipe_options_end_the_linear_start_early_keep_the_last_epoch_and_size_the_memory(task1):
    train, valid = split_valid(task1[0], seed=0)
    fixed = train_memn2n(train, valid, epochs=2, linear_start=6, progress=False)
    early = train_memn2n(train, valid, epochs=2, linear_start=6, linear_until="valid_loss", progress=False)
    phases = [e["phase"] for e in early.history.checkpoints]
    losses = [e["valid_loss"] for e in early.history.checkpoints if e["phase"] == "linear"]
    assert [e["phase"] for e in fixed.history.checkpoints].count("linear") == 6 and phases[-2:] == ["softmax"] * 2
    assert all(a > b for a, b in zip(losses, losses[1:-1], strict=False))  # it stopped where the loss did not fall
    if len(losses) < 6:
        assert losses[-1] >= losses[-2]
    last = train_memn2n(train, valid, epochs=3, linear_start=1, keep="last", progress=False)
    assert last.history.kept["epoch"] == 4
    longest = max(len(ex.story) for ex in task1[0])
    assert train_memn2n(
        train, valid, epochs=1, linear_start=0, attend_empty=True, progress=False
    ).model.config.memory_size == min(50, longest)
    for kwargs, message in [({"linear_until": "loss"}, "linear_until must be"), ({"keep": "first"}, "keep must be")]:
        with pytest.raises(ValueError, match=message):
            train_memn2n(train, valid, progress=False, **kwargs)


def test_runs_with_different_seeds_share_the_validation_split(task1):
    a = train_memn2n(task1[0], seed=0, epochs=1, linear_start=0, progress=False)
    b = train_memn2n(task1[0], seed=1, epochs=1, linear_start=0, progress=False)
    _, valid = split_valid(task1[0], seed=0)
    assert a.history.checkpoints[0]["valid_error"] == pytest.approx(a.error(valid))
    assert b.history.checkpoints[0]["valid_error"] == pytest.approx(b.error(valid))


def test_an_answer_the_vocabulary_never_saw_counts_as_wrong(trained):
    (ex,) = examples(parse_stories(["1 Mary moved to the kitchen.", "2 Where is Mary?\tmoon\t1"]))
    data = trained.tensors([ex])
    assert int(data.answer[0]) == trained.vocab.unk
    assert evaluate(trained.model, data)["error"] == 1.0


def test_a_bad_time_index_is_refused():
    model = make()
    story, query, lengths = random_batch()
    with pytest.raises(
        ValueError, match=r"time must be a \(B, M\) = \(4, 6\) long tensor >= 0, got torch.int64 \(4, 5\)"
    ):
        model(story, query, lengths, time=torch.zeros(4, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="time must be"):
        model(story, query, lengths, time=-torch.ones(4, 6, dtype=torch.long))
