import pytest

from kuberay_py.envtest.sim.addresses import AddressAllocator, AddressPoolExhausted


def test_addresses_are_unique_and_skip_network_and_broadcast_octets() -> None:
    alloc = AddressAllocator("10.244.0.253", "10.244.1.2")
    got = [alloc.allocate() for _ in range(4)]
    assert got == ["10.244.0.253", "10.244.0.254", "10.244.1.1", "10.244.1.2"]
    with pytest.raises(AddressPoolExhausted, match=r"10\.244\.0\.253\.\.10\.244\.1\.2"):
        alloc.allocate()


def test_freed_addresses_are_reused_last_and_reserve_claims_a_known_one() -> None:
    alloc = AddressAllocator("10.244.3.1", "10.244.3.3")
    a = alloc.allocate()
    assert alloc.reserve("10.244.3.2") is True
    assert alloc.reserve("10.244.3.2") is False
    alloc.free(a)
    assert alloc.allocate() == "10.244.3.3"  # fresh addresses first
    assert alloc.allocate() == a
    assert len(alloc) == 3


def test_an_address_of_another_block_is_not_reserved() -> None:
    """A Pod whose address came from another simulator's block gets a new one from this block."""
    alloc = AddressAllocator("10.244.3.2", "10.244.3.254")
    assert alloc.reserve("10.244.9.7") is False
    assert alloc.reserve("127.1.0.5") is False
    assert alloc.allocate() == "10.244.3.2"
