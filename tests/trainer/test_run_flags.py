"""The shared trainer flags' value checks (`trainer.run_flags`), each at
its limit and one step past it."""

import argparse

import pytest

from tfnlp.command_line import ArgumentParser
from trainer.run_flags import check_counts, ema_momentum, non_negative_seconds


def test_ema_momentum_takes_0_for_none_and_refuses_1():
    assert ema_momentum("0") == 0.0
    assert ema_momentum("0.999999") == 0.999999
    for value in ("1", "1.0", "-1e-9", "nan", "high"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"\[0, 1\)"):
            ema_momentum(value)


def test_seconds_take_0_and_refuse_anything_below_or_not_a_number():
    assert non_negative_seconds("0") == 0.0
    assert non_negative_seconds("1e-9") == 1e-9
    for value in ("-1e-9", "nan", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="0 or more"):
            non_negative_seconds(value)


def test_counts_at_their_limits_pass_and_one_past_them_exit(capsys):
    parser = ArgumentParser(prog="trainer")
    check_counts(parser, argparse.Namespace(batch=1, every=0), positive=("batch",),
                 non_negative=("every",))
    for flags, message in ((argparse.Namespace(batch=0, every=0), "--batch must be at least 1"),
                           (argparse.Namespace(batch=1, every=-1), "--every must not be")):
        with pytest.raises(SystemExit):
            check_counts(parser, flags, positive=("batch",), non_negative=("every",))
        assert message in capsys.readouterr().err
