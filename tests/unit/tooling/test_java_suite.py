"""tests/support/java_suite.py: which JUnit tests pytest knows, how JUnit's report becomes pytest
outcomes, and the known-differences file (the Java suite itself runs in tests/compat/java)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import java_suite
from tests.support.java_suite import JavaTest, Report, Target

SOURCE = """\
package odradek.compat;

/** Not a test: {@code @Test void javadoc()}. */
class SampleTest {
    @Test
    void plain() {
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip"})
    void parameterized(String codec) throws Exception {
    }

    @Test
    @Timeout(5)
    public void annotatedTwice() {
    }

    private static void helper() {
    }
}
"""

#: As JUnit's console launcher writes it (trimmed): a pass, a failure with captured output, two
#: invocations of a parameterized test, an assumption that did not hold and a @Disabled test.
REPORT = """\
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="JUnit Jupiter" tests="6">
<testcase name="plain()" classname="odradek.compat.SampleTest" time="0.1">
<system-out><![CDATA[
unique-id: [engine:junit-jupiter]/[class:odradek.compat.SampleTest]/[method:plain()]
display-name: plain()
]]></system-out>
</testcase>
<testcase name="annotatedTwice()" classname="odradek.compat.SampleTest" time="0.1">
<failure message="one is not two ==&gt; expected: &lt;1&gt; but was: &lt;2&gt;" type="AssertionFailedError">\
<![CDATA[org.opentest4j.AssertionFailedError: one is not two ==> expected: <1> but was: <2>
\tat org.junit.jupiter.api.AssertEquals.failNotEqual(AssertEquals.java:197)
\tat odradek.compat.SampleTest.annotatedTwice(SampleTest.java:15)
\tat java.base/java.lang.reflect.Method.invoke(Method.java:569)
]]></failure>
<system-out><![CDATA[
unique-id: [engine:junit-jupiter]/[class:odradek.compat.SampleTest]/[method:annotatedTwice()]
display-name: annotatedTwice()
]]></system-out>
<system-err><![CDATA[WARN the client said something
]]></system-err>
</testcase>
<testcase name="parameterized(String)[1]" classname="odradek.compat.SampleTest" time="0.1">
<system-out><![CDATA[
display-name: [1] none
]]></system-out>
</testcase>
<testcase name="parameterized(String)[2]" classname="odradek.compat.SampleTest" time="0.1">
<failure message="gzip broke" type="AssertionFailedError"><![CDATA[gzip broke]]></failure>
<system-out><![CDATA[
display-name: [2] gzip
]]></system-out>
</testcase>
<testcase name="assumed()" classname="odradek.compat.OtherTest" time="0">
<skipped><![CDATA[org.opentest4j.TestAbortedException: Assumption failed: only with kafka-clients 4
\tat org.junit.jupiter.api.Assumptions.assumeTrue(Assumptions.java:120)
]]></skipped>
</testcase>
<testcase name="disabled()" classname="odradek.compat.OtherTest" time="0">
<skipped><![CDATA[not yet]]></skipped>
</testcase>
</testsuite>
"""
TARGET = Target("single-node", "127.0.0.1:9092", 1)


def test_declared_tests_are_the_annotated_methods_of_each_test_class(tmp_path: Path) -> None:
    (tmp_path / "odradek").mkdir()
    (tmp_path / "odradek" / "SampleTest.java").write_text(SOURCE)
    (tmp_path / "odradek" / "Helper.java").write_text("class Helper { @Test void notATestClass() {} }")
    assert java_suite.declared_tests(roots=[tmp_path]) == [
        JavaTest("SampleTest", "annotatedTwice"),
        JavaTest("SampleTest", "parameterized"),
        JavaTest("SampleTest", "plain"),
    ]


def test_the_repositorys_java_suite_declares_tests_of_every_area() -> None:
    classes = {test.class_name for test in java_suite.declared_tests()}
    assert {
        "ProducerTest",
        "ClassicConsumerTest",
        "ConsumerProtocolTest",
        "TransactionsTest",
        "AdminTest",
    } <= classes


def test_a_passing_test_passes() -> None:
    _report().check(JavaTest("SampleTest", "plain"))


def test_a_failure_shows_the_assertion_its_trace_without_framework_frames_and_what_the_test_printed() -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        _report().check(JavaTest("SampleTest", "annotatedTwice"))
    text = str(failed.value)
    assert "SampleTest.annotatedTwice with kafka-clients kafka-4 against the single-node failed" in text
    assert "one is not two ==> expected: <1> but was: <2>" in text
    assert "at odradek.compat.SampleTest.annotatedTwice(SampleTest.java:15)" in text
    assert "org.junit.jupiter" not in text and "reflect.Method.invoke" not in text
    assert "WARN the client said something" in text


def test_a_parameterized_test_fails_when_one_invocation_does_and_names_it() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"(?s)\[2\] gzip: gzip broke") as failed:
        _report().check(JavaTest("SampleTest", "parameterized"))
    assert "[1] none" not in str(failed.value)


def test_an_assumption_that_did_not_hold_skips() -> None:
    with pytest.raises(pytest.skip.Exception, match="only with kafka-clients 4"):
        _report().check(JavaTest("OtherTest", "assumed"))


def test_a_disabled_test_fails_and_points_at_the_known_differences() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"skipped in JUnit \(not yet\).*known-differences.toml"):
        _report().check(JavaTest("OtherTest", "disabled"))


def test_a_test_junit_did_not_report_fails_with_the_launchers_output() -> None:
    report = _report()
    report.output = "the JVM could not start"
    with pytest.raises(
        pytest.fail.Exception, match=r"(?s)did not report SampleTest\.missing.*could not start"
    ):
        report.check(JavaTest("SampleTest", "missing"))


def test_what_junit_ran_beyond_the_declared_tests_is_named() -> None:
    declared = [JavaTest("SampleTest", "plain"), JavaTest("SampleTest", "annotatedTwice")]
    assert _report().undeclared(declared) == [
        "OtherTest.assumed",
        "OtherTest.disabled",
        "SampleTest.parameterized",
    ]


def test_known_differences_apply_to_their_lines_and_targets_only(tmp_path: Path) -> None:
    path = tmp_path / "known-differences.toml"
    path.write_text(
        '[[difference]]\ntest = "AdminTest.x"\ntargets = ["cluster"]\nclients = ["kafka-3.9"]\n'
        'reason = """not yet:\n  two lines"""\n'
        '[[difference]]\ntest = "ProducerTest.y"\nreason = "everywhere"\n'
    )
    differences = java_suite.known_differences(path)
    x, y = JavaTest("AdminTest", "x"), JavaTest("ProducerTest", "y")
    assert java_suite.known_difference(x, "kafka-3.9", "cluster", differences) == "not yet: two lines"
    assert java_suite.known_difference(x, "kafka-4", "cluster", differences) is None
    assert java_suite.known_difference(x, "kafka-3.9", "single-node", differences) is None
    assert all(
        java_suite.known_difference(y, line, target, differences) == "everywhere"
        for line in java_suite.LINES
        for target in java_suite.TARGETS
    )


@pytest.mark.parametrize(
    "entry",
    [
        'test = "A.b"',  # no reason
        'test = "A.b"\nreason = "r"\ntargets = ["kraft"]',
        'test = "A.b"\nreason = "r"\nclients = ["kafka-2.8"]',
        'test = "A.b"\nreason = "r"\nuntil = "later"',
    ],
)
def test_a_known_difference_without_a_reason_or_naming_an_unknown_target_is_refused(
    tmp_path: Path, entry: str
) -> None:
    path = tmp_path / "known-differences.toml"
    path.write_text(f"[[difference]]\n{entry}\n")
    with pytest.raises(ValueError):
        java_suite.known_differences(path)


def test_every_known_difference_names_a_declared_test() -> None:
    declared = {test.id for test in java_suite.declared_tests()}
    assert [d.test for d in java_suite.known_differences() if d.test not in declared] == []


def _report() -> Report:
    return Report("kafka-4", TARGET, java_suite.parse_report(REPORT))


def test_the_classes_that_kill_brokers_are_found_by_their_tag() -> None:
    killers = java_suite.tagged_classes(java_suite.KILLS_BROKERS)
    assert {"ProducerFailoverTest", "ClassicGroupFailoverTest", "ConsumerProtocolFailoverTest"} <= killers
    assert "PartitionerTest" not in killers


def test_a_second_runs_results_join_the_first_runs_report() -> None:
    first = _report()
    second = Report(
        "kafka-4", first.target, {JavaTest("KillTest", "kills"): [java_suite.Invocation("k", "passed")]}
    )
    first.merge(second)
    first.check(JavaTest("SampleTest", "plain"))
    first.check(JavaTest("KillTest", "kills"))


def test_a_parameterized_test_picked_by_pytest_k_is_selected_by_name_whatever_its_parameters() -> None:
    # JUnit's --select-method=Class#method finds no method that takes parameters, and the whole run
    # then failed discovery: `pytest -k` picking ProducerTest.acksOneAndAllAnswerEachRecordWithItsOffset
    # (a @ParameterizedTest) failed every test of the run.
    acks = "acksOneAndAllAnswerEachRecordWithItsOffset"
    chosen = [JavaTest("ProducerTest", acks), JavaTest("AdminTest", "x")]
    selection = java_suite._selectors(chosen)
    assert not any(option.startswith("--select-method=") for option in selection)
    assert sorted(o for o in selection if o.startswith("--select-class=")) == [
        "--select-class=odradek.compat.AdminTest",
        "--select-class=odradek.compat.ProducerTest",
    ]
    patterns = [o.removeprefix("--include-methodname=") for o in selection if "--include-methodname=" in o]

    def included(name: str) -> bool:
        return any(re.fullmatch(pattern, name) for pattern in patterns)

    # the fully qualified method names JUnit filters on: Class#method, with or without (parameter types)
    assert included(f"odradek.compat.ProducerTest#{acks}")
    assert included(f"odradek.compat.ProducerTest#{acks}(java.lang.String)")
    assert included("odradek.compat.AdminTest#x")
    assert included("odradek.compat.AdminTest#x()")
    assert not included("odradek.compat.AdminTest#xy()")
    assert not included("odradek.compat.ProducerTest#x()")
