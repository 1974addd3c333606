import pytest

from kuberay_py.envtest.sim.addresses import AddressAllocator, AddressPoolExhausted


def test_addresses_are_unique_loopback_and_skip_network_and_broadcast_octets() -> None:
    alloc = AddressAllocator("127.1.0.253", "127.1.1.2")
    got = [alloc.allocate() for _ in range(4)]
    assert got == ["127.1.0.253", "127.1.0.254", "127.1.1.1", "127.1.1.2"]
    with pytest.raises(AddressPoolExhausted):
        alloc.allocate()


def test_freed_addresses_are_reused_last_and_reserve_claims_a_known_one() -> None:
    alloc = AddressAllocator("127.1.0.1", "127.1.0.3")
    a = alloc.allocate()
    assert alloc.reserve("127.1.0.2") is True
    assert alloc.reserve("127.1.0.2") is False
    alloc.free(a)
    assert alloc.allocate() == "127.1.0.3"  # fresh addresses first
    assert alloc.allocate() == a
    assert len(alloc) == 3


def test_rejects_non_loopback_ranges() -> None:
    with pytest.raises(ValueError):
        AddressAllocator("10.0.0.1", "10.0.0.9")


def test_simulators_in_one_process_get_distinct_blocks() -> None:
    from kuberay_py.envtest.sim.addresses import random_block

    blocks = [random_block()[0] for _ in range(254)]
    assert len(set(blocks)) == 254
    assert all(b.startswith("127.") and b.endswith(".0.1") for b in blocks)
