# Neutrino Auto-Generated Code for Trace Reading
import struct
from typing import NamedTuple
from neutrino import TraceHeader, TraceSection


class DMAT(NamedTuple):
    clock: int
    addr: int


def parse(path: str) -> tuple[TraceHeader, list[TraceSection], dict[str, list[list[NamedTuple]]]]:
    with open(path, "rb") as f:
        header: TraceHeader = TraceHeader(*struct.unpack("iiiiiiii", f.read(32)))
        sections: list[TraceSection] = []
        for _ in range(header.numProbes):
            sections.append(TraceSection(*struct.unpack("IIQ", f.read(16))))
        gridSize = header.gridDimX * header.gridDimY * header.gridDimZ
        blockSize = header.blockDimX * header.blockDimY * header.blockDimZ
        records: dict[str, list[list[NamedTuple]]] = dict()

        # Read DMAT
        records["DMAT"] = []
        f.seek(sections[0].offset)
        for i in range(gridSize):
            records["DMAT"].append([])
            for j in range(blockSize // sections[0].warpDiv):
                records["DMAT"][-1].append([])
                for k in range(sections[0].size // 16):
                    records["DMAT"][i][j].append(DMAT(*struct.unpack("qq", f.read(16))))

    return header, sections, records
# END of Neutrino Auto-Generated Code for Trace Reading