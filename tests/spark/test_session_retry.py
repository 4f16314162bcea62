"""The SparkSession start-up retry: only Spark's UI/AmIpFilter race is tried again (a unit test
with a fake builder; the race itself needs a busy host to show, see session.is_ui_filter_race)."""
from __future__ import annotations

import pytest

from tfhadoop.spark import session

RACE = ("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": java.util.ConcurrentModificationException\n"
        "\tat org.sparkproject.jetty.ee10.servlet.ServletHandler.initialize(ServletHandler.java:687)\n"
        "\tat org.apache.spark.ui.SparkUI.attachAllHandlers(SparkUI.scala:82)\n"
        "\tat org.apache.spark.SparkContext.<init>(SparkContext.scala:703)\n")


class FakeBuilder:
    def __init__(self, failures):
        self.failures, self.calls = list(failures), 0

    def getOrCreate(self):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "session"


@pytest.fixture
def fake(monkeypatch):
    def use(*failures):
        fake_builder = FakeBuilder(failures)
        monkeypatch.setattr(session, "builder", lambda *a, **kw: fake_builder)
        return fake_builder
    return use


def test_the_ui_filter_race_is_tried_once_more(fake):
    b = fake(RuntimeError(RACE))
    assert session.get_session(master="yarn") == "session"
    assert b.calls == 2


def test_the_race_twice_is_an_error(fake):
    b = fake(RuntimeError(RACE), RuntimeError(RACE))
    with pytest.raises(RuntimeError, match="ConcurrentModificationException"):
        session.get_session(master="yarn")
    assert b.calls == 2


def test_other_failures_are_not_retried(fake):
    other = RuntimeError("java.util.ConcurrentModificationException\n\tat org.apache.spark.rdd.RDD.collect")
    b = fake(other)
    with pytest.raises(RuntimeError) as raised:
        session.get_session(master="yarn")
    assert raised.value is other and b.calls == 1
