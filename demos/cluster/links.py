"""What changes when work leaves one node: the links between GPUs, by their published peaks.

Inside a node, GPUs reach each other over NVLink (or PCIe); between nodes, over
the network, typically InfiniBand. The figures come from
``demos/results/interconnects.json`` (NVLink, InfiniBand) and
``demos/results/gpu_specs.json`` (PCIe), each with its source, and are all put
in the same unit here, gigabytes per second in one direction, because makers
quote networks in gigabits each way and NVLink in gigabytes both ways together.
"""

from __future__ import annotations

from dataclasses import dataclass

from demos import shipped_results


@dataclass(frozen=True)
class Link:
    name: str
    scope: str
    gb_per_s_each_way: float
    source: str


def published_links() -> list[Link]:
    """NVLink, PCIe Gen5 x16 and InfiniBand NDR, fastest first, in GB/s each way."""
    links = shipped_results.load("interconnects.json", required=True)["links"]
    nvlink, ndr = links["nvlink4"], links["infiniband_ndr"]
    h200 = shipped_results.load("gpu_specs.json", required=True)["gpus"]["NVIDIA H200"]
    return [
        Link(
            nvlink["name"],
            nvlink["scope"],
            nvlink["gb_per_s_both_directions"] / 2,
            nvlink["source"],
        ),
        Link(
            "PCIe Gen5 x16",
            "GPU to host, or GPU to GPU without NVLink",
            h200["pcie_gen5_x16_gb_per_s_both_directions"] / 2,
            h200["source"],
        ),
        Link(ndr["name"], ndr["scope"], ndr["gbit_per_s_each_direction"] / 8, ndr["source"]),
    ]


def seconds_to_send(n_bytes: float, link: Link) -> float:
    """The least time *n_bytes* take over *link* at its peak (no latency, no contention)."""
    return n_bytes / (link.gb_per_s_each_way * 1e9)


def table(n_bytes: float | None = None) -> str:
    """The links as a text table; with *n_bytes*, the least time to send that much over each."""
    head = f"{'link':<40} {'GB/s each way':>14}"
    if n_bytes is not None:
        head += f" {f'{n_bytes / 1e9:g} GB takes':>14}"
    lines = [head, "-" * len(head)]
    for link in published_links():
        line = f"{link.name:<40} {link.gb_per_s_each_way:>14,.0f}"
        if n_bytes is not None:
            line += f" {seconds_to_send(n_bytes, link) * 1e3:>11,.0f} ms"
        lines.append(line)
    return "\n".join(lines)
