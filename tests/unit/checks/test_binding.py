"""A function that makes findings binds, with checks.emits, the ids it makes; the finding factory
refuses any other while it runs, and the bindings are readable at run time."""

import pytest

import rocetune.doctor.below_checks  # noqa: F401  (binds doctor's checks)
import rocetune.doctor.checks  # noqa: F401
from rocetune import checks
from rocetune.doctor.base import CHECKS


def test_binding_an_undeclared_id_fails_at_import():
    with pytest.raises(checks.UnknownCheck, match="no-such-check"):
        checks.emits("roce-mtu-low", "no-such-check")


def test_a_function_making_an_id_it_did_not_bind_is_refused():
    @checks.emits("roce-mtu-low")
    def judge(check_id):
        return checks.finding(check_id, "mlx5_0:1", "m")

    assert judge("roce-mtu-low").id == "roce-mtu-low"
    with pytest.raises(checks.UnboundCheck, match="'memlock-limited'.*binds only roce-mtu-low"):
        judge("memlock-limited")


def test_the_innermost_binding_holds_and_the_outer_one_comes_back():
    @checks.emits("memlock-limited")
    def inner():
        return checks.finding("memlock-limited", "host", "m")

    @checks.emits("roce-mtu-low")
    def outer():
        made = [inner(), checks.finding("roce-mtu-low", "mlx5_0:1", "m")]
        with pytest.raises(checks.UnboundCheck):
            checks.finding("memlock-limited", "host", "m")
        return made

    assert [f.id for f in outer()] == ["memlock-limited", "roce-mtu-low"]
    # outside every bound function nothing is narrowed
    assert checks.finding("memlock-limited", "host", "m").id == "memlock-limited"


def test_a_generator_is_bound_while_it_runs_not_while_its_consumer_does():
    @checks.emits("roce-mtu-low")
    def findings():
        yield checks.finding("roce-mtu-low", "mlx5_0:1", "m")
        yield checks.finding("roce-mtu-low", "mlx5_1:1", "m")

    @checks.emits("memlock-limited")
    def consumer():
        out = []
        for f in findings():
            out.append(f)
            out.append(checks.finding("memlock-limited", "host", "m"))  # the consumer's own binding
        return out

    assert [f.id for f in consumer()] == ["roce-mtu-low", "memlock-limited"] * 2


def test_the_bound_functions_are_read_at_run_time():
    bound = checks.bound()
    assert bound["rocetune.doctor.checks.port_down"] == ("doctor-port-down",)
    assert bound["rocetune.doctor.checks.expect_unchecked"] == ("expect-unchecked",)
    declared = {c.id for c in checks.all_checks()}
    assert {i for ids in bound.values() for i in ids} <= declared


def test_every_doctor_check_is_bound_to_its_own_id():
    assert CHECKS and all(check_id in fn.emits for check_id, fn in CHECKS.items())
