"""Generates the idlewave PMPI tracer (C) from the MPI's own `mpi.h`.

Like LLNL's wrap.py, the list of wrappers is derived from the header the
application is compiled against, so every MPI function the library declares
is either modelled (recorded as docs/trace-format.md says), recorded as an
`other` record (RMA, MPI-IO, anything new), or deliberately skipped because it
is purely local (the LOCAL table below). Nothing that communicates vanishes.

    python -m idlewave.trace.gen_tracer --mpicc mpicc -o tracer.c

The output pastes `tracer_core.c` (the recording runtime) between the derived
configuration and the wrappers. Fortran: for every wrapped function that the
MPI's Fortran libraries export (checked with `nm -D`), wrappers for each name
mangling (`mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND`, and mpi_f08's
`mpi_send_f08_`) call the real binding `pmpi_*`, found with dlsym at the first
call, and record through the same runtime."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

CORE = Path(__file__).with_name("tracer_core.c")
# the record codes, generated from src/trace/ops.txt (scripts/gen_ops.py): pasted
# where tracer_core.c includes them, since the tracer is compiled from one file
OPS_H = Path(__file__).with_name("iw_ops.h")


class GenError(RuntimeError):
    """The MPI's header or toolchain could not be used; the message says why."""


# --------------------------------------------------------------------------
# Purely local functions: not wrapped (no communication, no synchronisation;
# recording them would only cost time). One regular expression per family,
# matched against the name without its MPI_ prefix. Everything not listed
# here and not modelled gets a generic wrapper writing an `other` record.
LOCAL: list[tuple[str, str]] = [
    (r"Wtime|Wtick", "clocks"),
    (r"Pcontrol", "profiling control (variadic)"),
    (r"Comm_(rank|size|group|remote_size|remote_group|test_inter|compare)", "communicator queries"),
    (r"Comm_(get|set)_\w+", "communicator properties (name, info, errhandler, attributes, parent)"),
    (r"(Comm|Type|Win)_(create_keyval|free_keyval|delete_attr|set_attr|get_attr)", "attribute caching"),
    (r"Keyval_(create|free)|Attr_(put|get|delete)", "attribute caching (deprecated forms)"),
    (r"(Comm|Win|File|Session)_(create_errhandler|call_errhandler)", "error handlers"),
    (r"(Win|File|Session)_(get|set)_errhandler", "error handlers"),
    (r"Errhandler_\w+", "error handlers"),
    (r"Type_\w+", "datatype construction and queries"),
    (r"Group_\w+", "group algebra"),
    (r"Info_\w+", "info objects"),
    (r"Op_\w+", "reduction operators"),
    (r"Get_(count|elements|elements_x|address|version|library_version|processor_name|hw_resource_info)(_c)?",
     "status, address and version queries"),
    (r"Status_\w+|Test_cancelled", "status accessors"),
    (r"Reduce_local(_c)?", "a local reduction (no communication)"),
    (r"\w+_(c2f|f2c|f082c|c2f08|f082f|f2f08)", "handle conversion"),
    (r"Initialized|Finalized|Query_thread|Is_thread_main", "state queries"),
    (r"Error_(class|string)|Add_error_\w+|Remove_error_\w+", "error classes and strings"),
    (r"Alloc_mem|Free_mem", "memory allocation"),
    (r"Aint_(add|diff)", "address arithmetic"),
    (r"(Pack|Unpack)\w*", "packing"),
    (r"Cart_(coords|rank|get|shift|map)|Cartdim_get", "Cartesian topology queries"),
    (r"Graph_(get|neighbors|neighbors_count|map)|Graphdims_get", "graph topology queries"),
    (r"Topo_test|Dims_create", "topology queries"),
    (r"Dist_graph_neighbors(_count)?", "distributed graph queries"),
    (r"Buffer_(attach|detach)(_c)?|(Comm|Session)_(attach|detach)_buffer(_c)?", "buffered-mode buffer management"),
    (r"T_\w+", "the tool information interface (MPI_T)"),
    (r"Session_(get_\w+|c2f)", "session queries"),
    (r"Win_(get_group|get_name|set_name|get_info|shared_query(_c)?)", "window queries"),
    (r"File_get_\w+", "file queries"),
    (r"Grequest_(start|complete)", "generalized requests (user-completed, local)"),
    (r"Register_datarep(_c)?", "data representation registration"),
    (r"Abi_\w+", "ABI queries"),
]

# --------------------------------------------------------------------------
# Modelled functions: canonical parameter names (checked against the header's
# arity) and the recording code, which sees C values under those names in the
# C and in the Fortran wrappers alike. In the code, t0/t1 are the call's entry
# and exit times; iw_req / iw_reqs / iw_in_comm / iw_msg are the request,
# request array, communicator or message handles as they were before the call
# (for parameters listed in `inout`); {C} is "" or "_c" (large-count variant)
# and {F} 1 in Fortran wrappers (type arrays are Fortran integers there).


@dataclass
class Spec:
    names: str
    record: str
    inout: str = ""    # handle pointers read before the call
    pre: str = ""      # bookkeeping before the call (under the lock)
    fails: str = ""    # a poll: C condition, after the call, that it found nothing (a run of them reads no clock)


# send modes: standard, synchronous, ready, buffered (prefix of the name, flag)
MODES = {"": "0", "s": "F_SYNC", "r": "F_READY", "b": "F_BUFFERED"}

MODELLED: dict[str, Spec] = {}
for mode, flag in MODES.items():
    MODELLED[f"{mode}send".capitalize()] = Spec(
        "buf count datatype dest tag comm", f"iw_send(OP_SEND, {flag}, count, datatype, dest, tag, comm, t0, t1);")
    MODELLED[f"I{mode}send"] = Spec(
        "buf count datatype dest tag comm request",
        f"iw_post(OP_ISEND, {flag}, count, datatype, dest, tag, comm, *request, 0, 0, t0, t1);")
    MODELLED[f"{mode}send_init".capitalize()] = Spec(
        "buf count datatype dest tag comm request",
        f"iw_post(OP_SEND_INIT, {flag}, count, datatype, dest, tag, comm, *request, 0, 1, t0, t1);")
MODELLED.update({
    "Recv": Spec("buf count datatype source tag comm status",
                 "iw_recvd(OP_RECV, source, tag, datatype, comm, status, t0, t1);"),
    "Irecv": Spec("buf count datatype source tag comm request",
                  "iw_post(OP_IRECV, 0, count, datatype, source, tag, comm, *request, 1, 0, t0, t1);"),
    "Recv_init": Spec("buf count datatype source tag comm request",
                      "iw_post(OP_RECV_INIT, 0, count, datatype, source, tag, comm, *request, 1, 1, t0, t1);"),
    "Sendrecv": Spec("sendbuf sendcount sendtype dest sendtag recvbuf recvcount recvtype source recvtag comm status",
                     "iw_send(OP_SENDRECV_SEND, 0, sendcount, sendtype, dest, sendtag, comm, t0, t1);\n"
                     "iw_recvd(OP_SENDRECV_RECV, source, recvtag, recvtype, comm, status, t0, t1);"),
    "Sendrecv_replace": Spec("buf count datatype dest sendtag source recvtag comm status",
                             "iw_send(OP_SENDRECV_SEND, 0, count, datatype, dest, sendtag, comm, t0, t1);\n"
                             "iw_recvd(OP_SENDRECV_RECV, source, recvtag, datatype, comm, status, t0, t1);"),
    "Start": Spec("request", "iw_start(iw_req, t0, t1);", inout="request"),
    "Startall": Spec("count array_of_requests", "for (int i = 0; i < count; i++) iw_start(iw_reqs[i], t0, t1);"),
    "Request_free": Spec("request", "iw_request_free(iw_req, t0, t1);", inout="request"),
    "Cancel": Spec("request", "iw_cancel(iw_req, t0, t1);", inout="request"),
    "Wait": Spec("request status", "iw_done(OP_WAIT, iw_req, status, t0, t1);", inout="request"),
    "Test": Spec("request flag status",
                 "if (*flag) iw_done(OP_TEST, iw_req, status, t0, t1); else iw_poll_req(1, &iw_req, t0, t1);",
                 inout="request", fails="!*flag"),
    "Waitall": Spec("count array_of_requests array_of_statuses",
                    "iw_done_many(OP_WAIT, count, NULL, iw_reqs, array_of_statuses, t0, t1);"),
    "Testall": Spec("count array_of_requests flag array_of_statuses",
                    "if (*flag) iw_done_many(OP_TEST, count, NULL, iw_reqs, array_of_statuses, t0, t1);\n"
                    "else iw_poll_req(count, iw_reqs, t0, t1);", fails="!*flag"),
    "Waitany": Spec("count array_of_requests index status",
                    "if (*index != MPI_UNDEFINED) iw_done(OP_WAIT, iw_reqs[*index], status, t0, t1);"),
    "Testany": Spec("count array_of_requests index flag status",
                    "if (!*flag) iw_poll_req(count, iw_reqs, t0, t1);\n"
                    "else if (*index != MPI_UNDEFINED) iw_done(OP_TEST, iw_reqs[*index], status, t0, t1);",
                    fails="!*flag"),
    "Waitsome": Spec("incount array_of_requests outcount array_of_indices array_of_statuses",
                     "if (*outcount != MPI_UNDEFINED)\n"
                     "    iw_done_many(OP_WAIT, *outcount, array_of_indices, iw_reqs, array_of_statuses, t0, t1);"),
    "Testsome": Spec("incount array_of_requests outcount array_of_indices array_of_statuses",
                     "if (*outcount == 0) iw_poll_req(incount, iw_reqs, t0, t1);\n"
                     "else if (*outcount != MPI_UNDEFINED)\n"
                     "    iw_done_many(OP_TEST, *outcount, array_of_indices, iw_reqs, array_of_statuses, t0, t1);",
                     fails="*outcount == 0"),
    # a successful Request_get_status completes nothing: the wait or test that follows does
    "Request_get_status": Spec("request flag status", "if (!*flag) iw_poll_req(1, &request, t0, t1);", fails="!*flag"),
    "Probe": Spec("source tag comm status", "iw_probed(OP_PROBE, source, tag, comm, status, NULL, t0, t1);"),
    "Iprobe": Spec("source tag comm flag status",
                   "if (*flag) iw_probed(OP_IPROBE, source, tag, comm, status, NULL, t0, t1);\n"
                   "else iw_poll(0, iw_cid(iw_comm_get(comm)), t0, t1);", fails="!*flag"),
    "Mprobe": Spec("source tag comm message status",
                   "iw_probed(OP_MPROBE, source, tag, comm, status, message, t0, t1);"),
    "Improbe": Spec("source tag comm flag message status",
                    "if (*flag) iw_probed(OP_IMPROBE, source, tag, comm, status, message, t0, t1);\n"
                    "else iw_poll(0, iw_cid(iw_comm_get(comm)), t0, t1);", fails="!*flag"),
    "Mrecv": Spec("buf count datatype message status", "iw_mrecvd(iw_msg, datatype, status, t0, t1);",
                  inout="message"),
    "Imrecv": Spec("buf count datatype message request", "iw_imrecv(iw_msg, count, datatype, *request, t0, t1);",
                   inout="message"),
    # communicators
    "Comm_split": Spec("comm color key newcomm", "iw_comm_created(K_SPLIT, comm, *newcomm, t0, t1);"),
    "Comm_split_type": Spec("comm split_type key info newcomm",
                            "iw_comm_created(K_SPLIT_TYPE, comm, *newcomm, t0, t1);"),
    "Comm_dup": Spec("comm newcomm", "iw_comm_duped(K_DUP, comm, *newcomm, t0, t1);"),
    "Comm_dup_with_info": Spec("comm info newcomm", "iw_comm_duped(K_DUP, comm, *newcomm, t0, t1);"),
    "Comm_idup": Spec("comm newcomm request", "iw_comm_iduped(comm, *newcomm, *request, t0, t1);"),
    "Comm_idup_with_info": Spec("comm info newcomm request", "iw_comm_iduped(comm, *newcomm, *request, t0, t1);"),
    "Comm_create": Spec("comm group newcomm", "iw_comm_created(K_CREATE, comm, *newcomm, t0, t1);"),
    "Comm_create_group": Spec("comm group tag newcomm", "iw_comm_created(K_CREATE_GROUP, comm, *newcomm, t0, t1);"),
    "Cart_create": Spec("comm_old ndims dims periods reorder comm_cart",
                        "iw_comm_created(K_CART_CREATE, comm_old, *comm_cart, t0, t1);"),
    "Cart_sub": Spec("comm remain_dims newcomm", "iw_comm_created(K_CART_SUB, comm, *newcomm, t0, t1);"),
    "Graph_create": Spec("comm_old nnodes index edges reorder comm_graph",
                         "iw_comm_created(K_GRAPH_CREATE, comm_old, *comm_graph, t0, t1);"),
    "Dist_graph_create": Spec("comm_old n sources degrees destinations weights info reorder comm_dist_graph",
                              "iw_comm_created(K_DIST_GRAPH_CREATE, comm_old, *comm_dist_graph, t0, t1);"),
    "Dist_graph_create_adjacent": Spec(
        "comm_old indegree sources sourceweights outdegree destinations destweights info reorder comm_dist_graph",
        "iw_comm_created(K_DIST_GRAPH_CREATE_ADJACENT, comm_old, *comm_dist_graph, t0, t1);"),
    "Intercomm_create": Spec("local_comm local_leader peer_comm remote_leader tag newintercomm",
                             "iw_comm_created(K_INTERCOMM_CREATE, local_comm, *newintercomm, t0, t1);"),
    "Intercomm_merge": Spec("intercomm high newintracomm",
                            "iw_comm_created(K_INTERCOMM_MERGE, intercomm, *newintracomm, t0, t1);"),
    # the handle is gone after the call: look the communicator up before it
    "Comm_free": Spec("comm", "iw_comm_freed(iw_in_comm, iw_cm, t0, t1);", inout="comm",
                      pre="iw_comm *iw_cm = iw_comm_get(iw_in_comm);"),
    "Comm_disconnect": Spec("comm", "iw_comm_freed(iw_in_comm, iw_cm, t0, t1);", inout="comm",
                            pre="iw_comm *iw_cm = iw_comm_get(iw_in_comm);"),
})

# Collectives: (op, canonical names of the blocking form, recording call with
# {OP}, {REQ} and {PERS} filled per form). Nonblocking forms (I...) append
# `request`, persistent ones (..._init, MPI-4) `info request`.
ROOTED_BYTES = {
    "Gather": "sendbuf == MPI_IN_PLACE ? iw_bytes(recvcount, recvtype) : root == MPI_ROOT ? 0 : iw_bytes(sendcount, sendtype)",
    "Scatter": "recvbuf == MPI_IN_PLACE ? iw_bytes(sendcount, sendtype) : root == MPI_ROOT ? 0 : iw_bytes(recvcount, recvtype)",
}
COLLECTIVES: dict[str, tuple[str, str, str]] = {
    "Barrier": ("OP_BARRIER", "comm", "iw_coll({OP}, comm, IW_NONE, 0, {REQ}, {PERS}, t0, t1);"),
    "Bcast": ("OP_BCAST", "buffer count datatype root comm",
              "iw_coll({OP}, comm, root, iw_bytes(count, datatype), {REQ}, {PERS}, t0, t1);"),
    "Reduce": ("OP_REDUCE", "sendbuf recvbuf count datatype op root comm",
               "iw_coll({OP}, comm, root, iw_bytes(count, datatype), {REQ}, {PERS}, t0, t1);"),
    "Allreduce": ("OP_ALLREDUCE", "sendbuf recvbuf count datatype op comm",
                  "iw_coll({OP}, comm, IW_NONE, iw_bytes(count, datatype), {REQ}, {PERS}, t0, t1);"),
    "Gather": ("OP_GATHER", "sendbuf sendcount sendtype recvbuf recvcount recvtype root comm",
               "iw_coll({OP}, comm, root, " + ROOTED_BYTES["Gather"] + ", {REQ}, {PERS}, t0, t1);"),
    "Scatter": ("OP_SCATTER", "sendbuf sendcount sendtype recvbuf recvcount recvtype root comm",
                "iw_coll({OP}, comm, root, " + ROOTED_BYTES["Scatter"] + ", {REQ}, {PERS}, t0, t1);"),
    "Allgather": ("OP_ALLGATHER", "sendbuf sendcount sendtype recvbuf recvcount recvtype comm",
                  "iw_coll({OP}, comm, IW_NONE, sendbuf == MPI_IN_PLACE ? iw_bytes(recvcount, recvtype) "
                  ": iw_bytes(sendcount, sendtype), {REQ}, {PERS}, t0, t1);"),
    "Alltoall": ("OP_ALLTOALL", "sendbuf sendcount sendtype recvbuf recvcount recvtype comm",
                 "iw_coll({OP}, comm, IW_NONE, sendbuf == MPI_IN_PLACE ? iw_bytes(recvcount, recvtype) "
                 ": iw_bytes(sendcount, sendtype), {REQ}, {PERS}, t0, t1);"),
    "Gatherv": ("OP_GATHERV", "sendbuf sendcount sendtype recvbuf recvcounts displs recvtype root comm",
                "iw_gatherv{C}({OP}, sendbuf, sendcount, sendtype, recvcounts, recvtype, root, comm, {REQ}, {PERS}, t0, t1);"),
    "Scatterv": ("OP_SCATTERV", "sendbuf sendcounts displs sendtype recvbuf recvcount recvtype root comm",
                 "iw_scatterv{C}({OP}, sendcounts, sendtype, recvbuf, recvcount, recvtype, root, comm, {REQ}, {PERS}, t0, t1);"),
    "Allgatherv": ("OP_ALLGATHERV", "sendbuf sendcount sendtype recvbuf recvcounts displs recvtype comm",
                   "iw_allgatherv{C}({OP}, sendbuf, sendcount, sendtype, recvcounts, recvtype, comm, {REQ}, {PERS}, t0, t1);"),
    "Alltoallv": ("OP_ALLTOALLV", "sendbuf sendcounts sdispls sendtype recvbuf recvcounts rdispls recvtype comm",
                  "iw_alltoallv{C}({OP}, sendbuf, sendcounts, &sendtype, recvcounts, &recvtype, 0, 0, comm, {REQ}, {PERS}, t0, t1);"),
    "Alltoallw": ("OP_ALLTOALLW", "sendbuf sendcounts sdispls sendtypes recvbuf recvcounts rdispls recvtypes comm",
                  "iw_alltoallv{C}({OP}, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, 1, {F}, comm, {REQ}, {PERS}, t0, t1);"),
    "Reduce_scatter": ("OP_REDUCE_SCATTER", "sendbuf recvbuf recvcounts datatype op comm",
                       "iw_reduce_scatter{C}({OP}, recvcounts, datatype, comm, {REQ}, {PERS}, t0, t1);"),
    "Reduce_scatter_block": ("OP_REDUCE_SCATTER_BLOCK", "sendbuf recvbuf recvcount datatype op comm",
                             "iw_coll({OP}, comm, IW_NONE, iw_bytes(recvcount, datatype), {REQ}, {PERS}, t0, t1);"),
    "Scan": ("OP_SCAN", "sendbuf recvbuf count datatype op comm",
             "iw_coll({OP}, comm, IW_NONE, iw_bytes(count, datatype), {REQ}, {PERS}, t0, t1);"),
    "Exscan": ("OP_EXSCAN", "sendbuf recvbuf count datatype op comm",
               "iw_coll({OP}, comm, IW_NONE, iw_bytes(count, datatype), {REQ}, {PERS}, t0, t1);"),
    "Neighbor_allgather": ("OP_NEIGHBOR_ALLGATHER", "sendbuf sendcount sendtype recvbuf recvcount recvtype comm",
                           "iw_neighbor{C}({OP}, NULL, sendcount, &sendtype, NULL, recvcount, &recvtype, 0, 0, comm, {REQ}, {PERS}, t0, t1);"),
    "Neighbor_allgatherv": ("OP_NEIGHBOR_ALLGATHERV", "sendbuf sendcount sendtype recvbuf recvcounts displs recvtype comm",
                            "iw_neighbor{C}({OP}, NULL, sendcount, &sendtype, recvcounts, 0, &recvtype, 0, 0, comm, {REQ}, {PERS}, t0, t1);"),
    "Neighbor_alltoall": ("OP_NEIGHBOR_ALLTOALL", "sendbuf sendcount sendtype recvbuf recvcount recvtype comm",
                          "iw_neighbor{C}({OP}, NULL, sendcount, &sendtype, NULL, recvcount, &recvtype, 0, 0, comm, {REQ}, {PERS}, t0, t1);"),
    "Neighbor_alltoallv": ("OP_NEIGHBOR_ALLTOALLV", "sendbuf sendcounts sdispls sendtype recvbuf recvcounts rdispls recvtype comm",
                           "iw_neighbor{C}({OP}, sendcounts, 0, &sendtype, recvcounts, 0, &recvtype, 0, 0, comm, {REQ}, {PERS}, t0, t1);"),
    "Neighbor_alltoallw": ("OP_NEIGHBOR_ALLTOALLW", "sendbuf sendcounts sdispls sendtypes recvbuf recvcounts rdispls recvtypes comm",
                           "iw_neighbor{C}({OP}, sendcounts, 0, sendtypes, recvcounts, 0, recvtypes, 1, {F}, comm, {REQ}, {PERS}, t0, t1);"),
}
for coll, (op, names, rec) in COLLECTIVES.items():
    MODELLED[coll] = Spec(names, rec.replace("{OP}", op).replace("{REQ}", "NULL").replace("{PERS}", "0"))
    MODELLED["I" + coll[0].lower() + coll[1:]] = Spec(
        names + " request", rec.replace("{OP}", op + " + IW_NB").replace("{REQ}", "request").replace("{PERS}", "0"))
    MODELLED[coll + "_init"] = Spec(
        names + " info request", rec.replace("{OP}", op + " + IW_PERS").replace("{REQ}", "request").replace("{PERS}", "1"))

# Written out in full below (no PMPI call pattern of the others).
SPECIAL = {"Init", "Init_thread", "Finalize", "Abort"}

# Fortran: integer outputs that are 1-based indices there.
F_INDEX = {"Waitany", "Testany"}
F_INDICES = {"Waitsome", "Testsome"}


# --------------------------------------------------------------------------
# Parsing mpi.h


@dataclass
class Param:
    decl: str          # declaration with "{}" where the name goes
    ctype: str         # normalised type, arrays as pointers: "const int *"
    name: str | None   # as in the header (None if unnamed)
    array: bool = False  # declared with []

    @property
    def is_char(self) -> bool:
        return re.search(r"\bchar\b", self.ctype) is not None


@dataclass
class Proto:
    name: str          # without the MPI_ prefix: "Send"
    params: list[Param]
    variadic: bool = False


@dataclass
class MpiIdentity:
    """The MPI a tracer is generated for; the tracer refuses to run with another."""
    mpicc: str
    family: str = ""    # "Open MPI", "MPICH", "Intel(R) MPI", "MVAPICH2"; "" if mpi.h says none of these
    version: str = ""   # as the library's version string shows it: "5.0.11", "4.1.2", "2021.10"
    library: str = ""   # real path of the libmpi that a program built with mpicc loads
    dirs: list[str] = field(default_factory=list)  # real directories of that MPI's libraries, libmpi's first

    @property
    def name(self) -> str:
        return f"{self.family} {self.version}".strip() or f"the MPI of {self.mpicc}"


@dataclass
class Plan:
    modelled: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    local: list[tuple[str, str]] = field(default_factory=list)    # (name, reason)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    fortran: list[str] = field(default_factory=list)              # symbols defined
    fortran_libs: list[str] = field(default_factory=list)
    mpi: MpiIdentity | None = None

    def summary(self) -> str:
        return (f"{len(self.modelled)} modelled, {len(self.other)} recorded as `other`, "
                f"{len(self.local)} local (not wrapped), {len(self.skipped)} skipped, "
                f"{len(self.fortran)} Fortran symbols")


TYPE_WORDS = {"int", "char", "void", "double", "float", "long", "short", "unsigned", "signed", "const", "volatile",
              "struct", "size_t"}


def strip_strings(text: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)


def balanced(text: str, start: int) -> int:
    """Index just past the parenthesis closing the one at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise GenError("unbalanced parentheses in mpi.h")


def split_params(text: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        depth += ch in "(["
        depth -= ch in ")]"
        cur.append(ch)
    out.append("".join(cur))
    return [" ".join(p.split()) for p in out if p.strip()]


def parse_param(p: str) -> Param:
    fp = re.search(r"\(\s*\*\s*(\w*)\s*\)", p)
    if fp:  # function pointer: void (*fn)(int)
        return Param(p[:fp.start(1)] + "{}" + p[fp.end(1):], "void *", fp.group(1) or None)
    arr = ""
    m = re.match(r"^(.*?)((?:\s*\[[^\]]*\])+)$", p)
    if m:
        p, arr = m.group(1), m.group(2)
    m = re.match(r"^(.*?)(\w+)$", p)
    name = None
    base = p
    if m and m.group(2) not in TYPE_WORDS and not m.group(2).startswith("MPI_") and re.search(r"\w", m.group(1)):
        base, name = m.group(1), m.group(2)
    tokens = re.findall(r"\w+|\*", base) + ["*"] * arr.count("[")
    ctype = " ".join(tokens).replace("* *", "**").replace("* *", "**")
    decl = base + "{}" + arr if base.endswith("*") else base.rstrip() + " {}" + arr
    return Param(decl, ctype, name, bool(arr))


def parse_header(text: str) -> dict[str, Proto]:
    """Every `int MPI_Xxx(...)` / `int PMPI_Xxx(...)` prototype, keyed
    "MPI_Xxx" / "PMPI_Xxx"."""
    text = strip_strings(text)
    protos: dict[str, Proto] = {}
    for m in re.finditer(r"\bint\s+(P?MPI_\w+)\s*\(", text):
        end = balanced(text, m.end() - 1)
        inner = text[m.end():end - 1].strip()
        params = [] if inner in ("", "void") else split_params(inner)
        variadic = "..." in params
        proto = Proto(m.group(1).split("_", 1)[1], [parse_param(p) for p in params if p != "..."], variadic)
        protos.setdefault(m.group(1), proto)
    return protos


def local_reason(name: str) -> str | None:
    for pattern, why in LOCAL:
        if re.fullmatch(pattern, name):
            return why
    return None


# --------------------------------------------------------------------------
# The MPI toolchain


def run(cmd: list[str], what: str) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise GenError(f"{cmd[0]} not found ({what})") from None
    except OSError as e:  # not executable, a directory, not a program
        raise GenError(f"{cmd[0]}: cannot run it: {e.strerror or e} ({what})") from None
    except subprocess.TimeoutExpired:
        raise GenError(f"{shlex.join(cmd)} did not finish within 120 s ({what})") from None
    if p.returncode != 0:
        raise GenError(failed(shlex.join(cmd), what, p))
    return p.stdout


def failed(command: str, what: str, p: subprocess.CompletedProcess) -> str:
    """What a command that failed said on stderr (its stdout may be
    mpi.h preprocessed), or that it said nothing, with its exit status."""
    said = (p.stderr or "").strip()
    if not said:
        return f"{command} failed ({what}) with exit status {p.returncode} and no output"
    return f"{command} failed ({what}):\n{said}"


def preprocess(mpicc: str) -> tuple[str, set[str]]:
    """mpi.h after the preprocessor, and the function-like macros it defines
    (a function that is also a macro cannot be defined, e.g. Open MPI's
    removed MPI-1 functions)."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "h.c"
        src.write_text("#include <mpi.h>\n")
        text = run([mpicc, "-E", "-P", str(src)], "preprocessing mpi.h")
        defs = run([mpicc, "-E", "-dM", str(src)], "listing mpi.h's macros")
    macros = set(re.findall(r"#define\s+(P?MPI_\w+)\(", defs))
    macros |= set(re.findall(r"#define\s+(\w+)", defs))
    return text, macros


def lib_dirs(mpicc: str) -> list[str]:
    """The -L directories of mpicc's link line (Open MPI's -showme or MPICH's -show)."""
    for flag in ("-showme:link", "-show", "--showme"):
        try:
            p = subprocess.run([mpicc, flag], capture_output=True, text=True, timeout=60)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return []
        if p.returncode == 0 and p.stdout.strip():
            dirs = re.findall(r"-L\s*(\S+)", p.stdout)
            dirs += re.findall(r"-Wl,-rpath,(\S+)", p.stdout)
            return list(dict.fromkeys(dirs))
    return []


FORTRAN_LIBS = ("libmpi_mpifh.so", "libmpi_usempif08.so", "libmpifort.so")


def fortran_symbols(mpicc: str, plan: Plan) -> set[str]:
    """Symbols the MPI's Fortran libraries export (empty if it has none or nm is missing)."""
    nm = shutil.which("nm")
    if not nm:
        return set()
    syms: set[str] = set()
    for d in lib_dirs(mpicc):
        for lib in FORTRAN_LIBS:
            for f in sorted(Path(d).glob(lib + "*")):
                p = subprocess.run([nm, "-D", "--defined-only", str(f)], capture_output=True, text=True)
                if p.returncode == 0:
                    syms |= {line.split()[-1] for line in p.stdout.splitlines() if line.strip()}
                    plan.fortran_libs.append(str(f))
                break
    return syms


# --------------------------------------------------------------------------
# Which MPI: the tracer records it and checks it at MPI_Init (tracer_core.c)

# File-name prefixes of an MPI implementation's shared objects (as iw_mpi_object in tracer_core.c).
MPI_LIBRARY_PREFIXES = ("libmpi.", "libmpi_", "libmpi-", "libmpich", "libmpifort", "libmpicxx", "libopen-pal.",
                        "libopen-rte.", "libpmpi")


def is_mpi_library(path: str) -> bool:
    return os.path.basename(path).startswith(MPI_LIBRARY_PREFIXES)


def macro_values(mpicc: str) -> dict[str, str]:
    """mpi.h's object-like macros and their values."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "h.c"
        src.write_text("#include <mpi.h>\n")
        defs = run([mpicc, "-E", "-dM", str(src)], "listing mpi.h's macros")
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^#define\s+(\w+)\s+(.*)$", defs, re.M)}


def version_of(macros: dict[str, str]) -> tuple[str, str]:
    """(implementation, version) from mpi.h's macros, as MPI_Get_library_version writes them."""
    def text(name: str) -> str:
        return macros.get(name, "").strip().strip('"')

    if text("I_MPI_VERSION"):  # Intel MPI also defines MPICH_VERSION; its library string says "2021.10"
        return "Intel(R) MPI", ".".join(text("I_MPI_VERSION").split(".")[:2])
    if text("MVAPICH2_VERSION"):
        return "MVAPICH2", text("MVAPICH2_VERSION")
    if text("MPICH_VERSION"):
        return "MPICH", text("MPICH_VERSION")
    parts = [text(f"OMPI_{p}_VERSION") for p in ("MAJOR", "MINOR", "RELEASE")]
    if all(p.isdigit() for p in parts):
        return "Open MPI", ".".join(parts)
    return "", ""


PROBE = r"""#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
static int each(struct dl_phdr_info *i, size_t n, void *d) {
    (void)n; (void)d;
    if (i->dlpi_name && i->dlpi_name[0]) printf("LOADED %s\n", i->dlpi_name);
    return 0;
}
int main(void) {
    Dl_info di;
    if (dladdr((void *)&PMPI_Init, &di) && di.dli_fname) printf("LIBMPI %s\n", di.dli_fname);
    dl_iterate_phdr(each, NULL);
    return 0;
}
"""


def loaded_libraries(mpicc: str) -> tuple[str, list[str]]:
    """(libmpi, MPI libraries) that a program built with mpicc loads, as real
    paths: a small program is built and run (it does not initialise MPI).
    Falls back to the libmpi in mpicc's -L directories; ("", []) if neither works."""
    with tempfile.TemporaryDirectory() as d:
        src, exe = Path(d) / "probe.c", Path(d) / "probe"
        src.write_text(PROBE)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        try:
            p = subprocess.run([mpicc, "-o", str(exe), str(src), "-ldl"], capture_output=True, text=True, timeout=120)
            if p.returncode == 0:
                p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, env=env)
                if p.returncode == 0:
                    lib = next((line[7:] for line in p.stdout.splitlines() if line.startswith("LIBMPI ")), "")
                    loaded = [line[7:] for line in p.stdout.splitlines() if line.startswith("LOADED ")]
                    if lib:
                        return os.path.realpath(lib), [os.path.realpath(x) for x in loaded if is_mpi_library(x)]
        except (OSError, subprocess.TimeoutExpired):
            pass
    for d in lib_dirs(mpicc):
        for name in ("libmpi.so", "libmpich.so", "libmpi_cray.so"):
            f = Path(d) / name
            if f.exists():
                return os.path.realpath(f), []
    return "", []


def identify(mpicc: str, fortran_libs: Sequence[str] = ()) -> MpiIdentity:
    """The MPI behind mpicc: its version (mpi.h), the libmpi its programs load
    and the directories of its libraries (with its Fortran libraries')."""
    cc = shutil.which(mpicc) or mpicc
    family, version = version_of(macro_values(cc))
    lib, loaded = loaded_libraries(cc)
    dirs = [os.path.dirname(p) for p in ([lib] if lib else []) + loaded + [os.path.realpath(f) for f in fortran_libs]]
    return MpiIdentity(os.path.abspath(cc), family, version, lib, list(dict.fromkeys(dirs)))


def c_string(s: str) -> str:
    """A C string literal of s (UTF-8 bytes, escaped)."""
    out = []
    for b in s.encode():
        c = chr(b)
        out.append("\\" + c if c in '"\\' else c if 32 <= b < 127 and c != "?" else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def identity_config(mpi: MpiIdentity) -> list[str]:
    """The generated configuration lines that tracer_core.c's MPI check reads."""
    dirs = ", ".join(c_string(d) for d in mpi.dirs)
    return [f"#define IW_BUILT_FAMILY {c_string(mpi.family)}",
            f"#define IW_BUILT_VERSION {c_string(mpi.version)}",
            f"#define IW_BUILT_MPICC {c_string(mpi.mpicc)}",
            f"#define IW_BUILT_LIBRARY {c_string(mpi.library)}",
            "static const char *const iw_built_dirs[] = {" + (dirs + ", " if dirs else "") + "NULL};"]


# --------------------------------------------------------------------------
# Code generation


def c_params(proto: Proto, names: list[str]) -> str:
    if not proto.params:
        return "void"
    return ", ".join(p.decl.format(n) for p, n in zip(proto.params, names))


def count_name(names: list[str]) -> str:
    return "incount" if "incount" in names else "count"


def c_wrapper(idx: int, proto: Proto, spec: Spec, large: bool) -> str:
    names = spec.names.split()
    args = ", ".join(names)
    inout = spec.inout.split()
    record = spec.record.replace("{C}", "_c" if large else "").replace("{F}", "0")
    pre, cleanup = [], []
    for p, n in zip(proto.params, names):
        if n in inout and p.ctype.endswith("*"):
            var = {"request": "iw_req", "comm": "iw_in_comm", "message": "iw_msg"}[n]
            pre.append(f"{p.ctype[:-2].replace('const ', '')} {var} = *{n};")
        elif n == "array_of_requests":
            cn = count_name(names)
            pre.append(f"MPI_Request iw_reqs_small[IW_SMALL], *iw_reqs = {cn} <= IW_SMALL ? iw_reqs_small "
                       f": iw_xmalloc(sizeof(MPI_Request) * (size_t){cn});")
            pre.append(f"if ({cn} > 0) memcpy(iw_reqs, {n}, sizeof(MPI_Request) * (size_t){cn});")
            cleanup.append("if (iw_reqs != iw_reqs_small) free(iw_reqs);")
        elif n == "status":
            pre.append("MPI_Status iw_st;")
            pre.append("if (status == MPI_STATUS_IGNORE) status = &iw_st;")
        elif n == "array_of_statuses":
            cn = count_name(names)
            pre.append("MPI_Status iw_sts_small[IW_SMALL], *iw_sts_heap = NULL;")
            pre.append(f"if (array_of_statuses == MPI_STATUSES_IGNORE)\n"
                       f"        array_of_statuses = {cn} <= IW_SMALL ? iw_sts_small "
                       f": (iw_sts_heap = iw_xmalloc(sizeof(MPI_Status) * (size_t){cn}));")
            cleanup.append("free(iw_sts_heap);")
    locked_pre = f"IW_LOCK();\n    {spec.pre}\n    IW_UNLOCK();" if spec.pre else ""
    if spec.fails:
        # in a run of failed polls: no clock read unless this one finds something (tracer_core.c, iw_streak)
        call = ["int iw_quick = iw_streak;", "double t0 = iw_quick ? 0 : iw_enter();",
                f"int rc = PMPI_{proto.name}({args});",
                f"if (iw_quick && ({spec.fails}) && iw_streak_poll({idx})) {{ {' '.join(cleanup)} iw_depth--; return rc; }}",
                "if (iw_quick) t0 = iw_enter();"]
    else:
        call = ["double t0 = iw_enter();", f"int rc = PMPI_{proto.name}({args});"]
    body = [*pre, locked_pre, *call,
            "double t1 = iw_leave(t0);", "IW_LOCK();", f"iw_count({idx}, t0, t1);", *record.split("\n"),
            "IW_UNLOCK();", *cleanup, "iw_tracer_spent(t1);", "iw_depth--;", "return rc;"]
    return (f"int MPI_{proto.name}({c_params(proto, names)}) {{\n"
            f"    if (!IW_ACTIVE()) return PMPI_{proto.name}({args});\n"
            f"    iw_depth++;\n" + "".join(f"    {line}\n" for line in body if line) + "}\n")


def generic_names(proto: Proto) -> list[str]:
    return [f"a{i}" for i in range(len(proto.params))]


def generic_refs(proto: Proto, names: list[str]) -> tuple[str, str, str]:
    """C expressions for iw_other: the first communicator argument, the
    first request output, the first communicator output."""
    comm = req = newcomm = None
    for p, n in zip(proto.params, names):
        if p.array or (p.name or "").startswith("array_of"):
            continue
        if p.ctype == "MPI_Comm" and comm is None:
            comm = n
        elif p.ctype == "MPI_Request *" and req is None:
            req = n
        elif p.ctype == "MPI_Comm *" and newcomm is None:
            newcomm = n
    return comm or "MPI_COMM_NULL", req or "NULL", newcomm or "NULL"


def c_generic(idx: int, proto: Proto) -> str:
    names = generic_names(proto)
    args = ", ".join(names)
    comm, req, newcomm = generic_refs(proto, names)
    return (f"int MPI_{proto.name}({c_params(proto, names)}) {{\n"
            f"    if (!IW_ACTIVE()) return PMPI_{proto.name}({args});\n"
            f"    iw_depth++;\n"
            f"    double t0 = iw_enter();\n"
            f"    int rc = PMPI_{proto.name}({args});\n"
            f"    double t1 = iw_leave(t0);\n"
            f"    IW_LOCK();\n"
            f"    iw_count({idx}, t0, t1);\n"
            f"    iw_other({idx}, {comm}, {req}, {newcomm}, t0, t1);\n"
            f"    IW_UNLOCK();\n"
            f"    iw_tracer_spent(t1);\n"
            f"    iw_depth--;\n"
            f"    return rc;\n}}\n")


def c_special(idx: dict[str, int], protos: dict[str, Proto]) -> str:
    out = []
    if "Init" in idx:
        out.append(f"""int MPI_Init({c_params(protos['Init'], ['argc', 'argv'])}) {{
    if (!iw_on && !iw_depth) iw_starting();
    double t0 = iw_mono();
    int rc = PMPI_Init(argc, argv);
    if (!iw_on && !iw_depth) iw_started({idx['Init']}, t0);
    return rc;
}}
""")
    if "Init_thread" in idx:
        out.append(f"""int MPI_Init_thread({c_params(protos['Init_thread'], ['argc', 'argv', 'required', 'provided'])}) {{
    if (!iw_on && !iw_depth) iw_starting();
    double t0 = iw_mono();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (!iw_on && !iw_depth) iw_started({idx['Init_thread']}, t0);
    return rc;
}}
""")
    if "Finalize" in idx:
        out.append(f"""int MPI_Finalize(void) {{
    if (IW_ACTIVE()) {{ IW_LOCK(); iw_close({idx['Finalize']}, iw_enter()); IW_UNLOCK(); }}
    return PMPI_Finalize();
}}
""")
    if "Abort" in idx:
        out.append(f"""int MPI_Abort({c_params(protos['Abort'], ['comm', 'errorcode'])}) {{
    if (IW_ACTIVE()) {{ IW_LOCK(); iw_abort({idx['Abort']}, comm, iw_now()); IW_UNLOCK(); }}
    return PMPI_Abort(comm, errorcode);
}}
""")
    return "\n".join(out)


# ------------------------------------------------------------------ Fortran

def f_manglings(name: str, syms: set[str]) -> list[tuple[str, list[str]]]:
    """(wrapper symbol, real symbols to try) for each Fortran name of MPI_<name>
    that the MPI exports: mpif.h/`use mpi` manglings, then mpi_f08's."""
    low, up = name.lower(), name.upper()
    f77 = [f"mpi_{low}_", f"mpi_{low}__", f"mpi_{low}", f"MPI_{up}"]
    real77 = [f"pmpi_{low}_", f"pmpi_{low}__", f"pmpi_{low}", f"PMPI_{up}"]
    out = []
    if any(s in syms for s in f77):
        for w, r in zip(f77, real77):
            out.append((w, [r] + [x for x in real77 if x != r]))
    for suffix in ("_", "", "__"):
        w = f"mpi_{low}_f08{suffix}"
        if w in syms:
            out.append((w, [f"pmpi_{low}_f08{suffix}"]))
    return out


def f_convert(fn: str, proto: Proto, names: list[str], spec: Spec | None, large: bool):
    """Fortran wrapper pieces: (conversions before the call, arguments for the
    real binding, conversions after it, cleanup). Every Fortran argument is a
    pointer `f_<name>`; the recording code sees C values under the canonical
    names. Only what the recording code references is converted."""
    code = (spec.record + " " + spec.pre) if spec else ""
    inout = spec.inout.split() if spec else []
    used = set(re.findall(r"\w+", code))
    cn = count_name(names)
    need = set(used)
    if "iw_reqs" in used or "array_of_statuses" in used:
        need.add(cn)
    pre, post, arrays_post, cleanup = [], [], [], []
    realargs = []
    for p, n in zip(proto.params, names):
        f, t = f"f_{n}", p.ctype
        realargs.append(f)
        if n in inout:
            var = {"request": ("iw_req", "MPI_Request", "Request"), "comm": ("iw_in_comm", "MPI_Comm", "Comm"),
                   "message": ("iw_msg", "MPI_Message", "Message")}[n]
            pre.append(f"{var[1]} {var[0]} = PMPI_{var[2]}_f2c(*(MPI_Fint *){f});")
        elif n == "array_of_requests" and "iw_reqs" in used:
            pre.append(f"IW_FREQS(iw_reqs, (const MPI_Fint *){f}, {cn});")
            cleanup.append("IW_FREE_SMALL(iw_reqs);")
        elif n == "status" and t == "MPI_Status *" and "status" in used:
            pre.append("MPI_Fint iw_fst[IW_FSTATUS];")
            pre.append(f"void *{f}_r = iw_fstatus_ignored((const MPI_Fint *){f}) ? (void *)iw_fst : {f};")
            realargs[-1] = f"{f}_r"
            post.append(f"MPI_Status iw_cst, *status = &iw_cst;\n    PMPI_Status_f2c((MPI_Fint *){f}_r, &iw_cst);")
        elif n == "array_of_statuses" and "array_of_statuses" in used:
            pre.append(f"MPI_Fint iw_fsts_small[IW_SMALL * IW_FSTRIDE], *iw_fsts = {cn} <= IW_SMALL ? iw_fsts_small "
                       f": iw_xmalloc(sizeof(MPI_Fint) * IW_FSTRIDE * (size_t){cn});")
            pre.append(f"void *{f}_r = iw_fstatuses_ignored((const MPI_Fint *){f}) ? (void *)iw_fsts : {f};")
            realargs[-1] = f"{f}_r"
            arrays_post.append(f"MPI_Status iw_csts_small[IW_SMALL], *array_of_statuses = {cn} <= IW_SMALL ? "
                               f"iw_csts_small : iw_xmalloc(sizeof(MPI_Status) * (size_t){cn});\n"
                               f"    for (int iw_i = 0; iw_i < {cn}; iw_i++)\n"
                               f"        PMPI_Status_f2c((MPI_Fint *){f}_r + iw_i * IW_FSTRIDE, &array_of_statuses[iw_i]);")
            cleanup.append("if (iw_fsts != iw_fsts_small) free(iw_fsts);")
            cleanup.append("if (array_of_statuses != iw_csts_small) free(array_of_statuses);")
        elif n not in need:
            continue
        elif t == "int":
            pre.append(f"int {n} = (int)*(const MPI_Fint *){f};")
        elif t in ("MPI_Count", "MPI_Aint", "MPI_Offset"):
            pre.append(f"{t} {n} = *(const {t} *){f};")
        elif t in ("const void *", "void *"):
            pre.append(f"const void *{n} = iw_fbuf({f});")
        elif t in ("const int *", "int *") and n == "array_of_indices":
            arrays_post.append(f"int iw_idx_small[IW_SMALL], *{n} = *outcount <= IW_SMALL || *outcount == MPI_UNDEFINED "
                               f"? iw_idx_small : iw_xmalloc(sizeof(int) * (size_t)*outcount);\n"
                               f"    for (int iw_i = 0; *outcount != MPI_UNDEFINED && iw_i < *outcount; iw_i++) "
                               f"{n}[iw_i] = (int)((const MPI_Fint *){f})[iw_i] - 1; /* Fortran indices are 1-based */")
            cleanup.append(f"if ({n} != iw_idx_small) free({n});")
        elif t == "int *":  # flag, index, outcount
            conv = f"(int)*(const MPI_Fint *){f}"
            if n == "flag":
                conv = f"*(const MPI_Fint *){f} != 0"  # a LOGICAL: any nonzero is .true.
            elif n == "index" and fn in F_INDEX:
                conv = f"{conv} == MPI_UNDEFINED ? MPI_UNDEFINED : {conv} - 1"
            post.append(f"int {n}_c = {conv}, *{n} = &{n}_c;")
        elif t == "const int *":
            pre.append(f"const int *{n} = (const int *){f};")
        elif t in ("const MPI_Count *", "const MPI_Aint *"):
            pre.append(f"{t}{n} = ({t}){f};")
        elif t in ("const MPI_Datatype *", "MPI_Datatype *") and n.endswith("types"):
            pre.append(f"const void *{n} = {f}; /* Fortran integers: iw_type_at(..., 1) */")
        elif t in ("MPI_Comm", "MPI_Datatype", "MPI_Request", "MPI_Group", "MPI_Info", "MPI_Op", "MPI_Win",
                   "MPI_File", "MPI_Message"):
            kind = {"MPI_Datatype": "Type"}.get(t, t[4:])
            pre.append(f"{t} {n} = PMPI_{kind}_f2c(*(const MPI_Fint *){f});")
        elif t in ("MPI_Request *", "MPI_Comm *", "MPI_Message *"):  # outputs
            kind, null = {"MPI_Request *": ("Request", "MPI_REQUEST_NULL"), "MPI_Comm *": ("Comm", "MPI_COMM_NULL"),
                          "MPI_Message *": ("Message", "MPI_MESSAGE_NULL")}[t]
            post.append(f"{t[:-2]} {n}_c = PMPI_{kind}_f2c(*(const MPI_Fint *){f}), *{n} = &{n}_c;")
        else:
            raise GenError(f"MPI_{fn}: no Fortran conversion for parameter {n} of type {t}")
    return pre, realargs, post + arrays_post, cleanup


def f_signature(proto: Proto, names: list[str]) -> tuple[str, str, str]:
    """(parameter list, argument list, prototype of the real binding): every
    argument a pointer, then ierror, then a hidden length per character argument."""
    fparams = [f"void *f_{n}" for n in names] + ["void *f_ierr"]
    args = [f"f_{n}" for n in names] + ["f_ierr"]
    lens = [f"size_t f_len{i}" for i, p in enumerate(proto.params) if p.is_char]
    fparams += lens
    args += [x.split()[-1] for x in lens]
    proto_types = ", ".join(["void *"] * (len(names) + 1) + ["size_t"] * len(lens))
    return ", ".join(fparams), ", ".join(args), proto_types


def f_resolver(reals: list[str]) -> str:
    lst = ", ".join(f'"{r}"' for r in reals)
    return (f"    static iw_ffn iw_real;\n"
            f"    if (!iw_real) {{ static const char *const iw_n[] = {{{lst}, NULL}}; iw_real = iw_resolve(iw_n); }}\n")


def f_wrapper(sym: str, reals: list[str], idx: int, proto: Proto, names: list[str], spec: Spec | None) -> str:
    fparams, fargs, ptypes = f_signature(proto, names)
    call = f"((void (*)({ptypes}))iw_real)"
    if spec is None:  # generic: pass everything through, record `other`
        comm, req, newcomm = generic_refs(proto, names)
        conv = []
        if comm != "MPI_COMM_NULL":
            conv.append(f"MPI_Comm iw_c = PMPI_Comm_f2c(*(const MPI_Fint *)f_{comm});")
            comm = "iw_c"
        if req != "NULL":
            conv.append(f"MPI_Request iw_r = PMPI_Request_f2c(*(const MPI_Fint *)f_{req});")
            req = "&iw_r"
        if newcomm != "NULL":
            conv.append(f"MPI_Comm iw_nc = PMPI_Comm_f2c(*(const MPI_Fint *)f_{newcomm});")
            newcomm = "&iw_nc"
        body = ["double t0 = iw_enter();", f"{call}({fargs});", "double t1 = iw_leave(t0);", *conv, "IW_LOCK();",
                f"iw_count({idx}, t0, t1);", f"iw_other({idx}, {comm}, {req}, {newcomm}, t0, t1);", "IW_UNLOCK();",
                "iw_tracer_spent(t1);"]
    else:
        pre, realargs, post, cleanup = f_convert(proto.name.removesuffix("_c"), proto, names, spec, False)
        real_call_args = ", ".join(realargs + ["f_ierr"])
        record = spec.record.replace("{C}", "").replace("{F}", "1")
        locked_pre = f"IW_LOCK();\n    {spec.pre}\n    IW_UNLOCK();" if spec.pre else ""
        body = [*pre, locked_pre, "double t0 = iw_enter();", f"{call}({real_call_args});", "double t1 = iw_leave(t0);",
                *post, "IW_LOCK();", f"iw_count({idx}, t0, t1);", *record.split("\n"), "IW_UNLOCK();", *cleanup,
                "iw_tracer_spent(t1);"]
    return (f"void {sym}({fparams}) {{\n" + f_resolver(reals) +
            f"    if (!IW_ACTIVE()) {{ {call}({fargs}); return; }}\n"
            f"    iw_depth++;\n" + "".join(f"    {line}\n" for line in body if line) + "    iw_depth--;\n}\n")


def f_special(sym: str, reals: list[str], name: str, idx: int) -> str:
    res = f_resolver(reals)
    if name == "Init":
        return (f"void {sym}(void *f_ierr) {{\n{res}    if (!iw_on && !iw_depth) iw_starting();\n"
                f"    double t0 = iw_mono();\n"
                f"    ((void (*)(void *))iw_real)(f_ierr);\n"
                f"    if (!iw_on && !iw_depth) iw_started({idx}, t0);\n}}\n")
    if name == "Init_thread":
        return (f"void {sym}(void *f_required, void *f_provided, void *f_ierr) {{\n{res}"
                f"    if (!iw_on && !iw_depth) iw_starting();\n    double t0 = iw_mono();\n"
                f"    ((void (*)(void *, void *, void *))iw_real)(f_required, f_provided, f_ierr);\n"
                f"    if (!iw_on && !iw_depth) iw_started({idx}, t0);\n}}\n")
    if name == "Finalize":
        return (f"void {sym}(void *f_ierr) {{\n{res}"
                f"    if (IW_ACTIVE()) {{ IW_LOCK(); iw_close({idx}, iw_enter()); IW_UNLOCK(); }}\n"
                f"    ((void (*)(void *))iw_real)(f_ierr);\n}}\n")
    if name == "Abort":
        return (f"void {sym}(void *f_comm, void *f_errorcode, void *f_ierr) {{\n{res}"
                f"    if (IW_ACTIVE()) {{ IW_LOCK(); iw_abort({idx}, PMPI_Comm_f2c(*(const MPI_Fint *)f_comm), iw_now()); IW_UNLOCK(); }}\n"
                f"    ((void (*)(void *, void *, void *))iw_real)(f_comm, f_errorcode, f_ierr);\n}}\n")
    raise GenError(name)


# --------------------------------------------------------------------------


def plan_functions(protos: dict[str, Proto], macros: set[str], plan: Plan) -> list[tuple[str, Spec | None]]:
    """Every PMPI function of the header, classified; returns the wrapped ones."""
    wrapped: list[tuple[str, Spec | None]] = []
    for key in sorted(protos):
        if not key.startswith("PMPI_"):
            continue
        name = key[5:]
        proto = protos.get("MPI_" + name)
        if proto is None:
            plan.skipped.append((name, "no MPI_ prototype"))
            continue
        why = local_reason(name)
        if why:
            plan.local.append((name, why))
            continue
        if "MPI_" + name in macros or key in macros:
            plan.skipped.append((name, "a macro in mpi.h (removed from the standard)"))
            continue
        if proto.variadic:
            plan.skipped.append((name, "variadic"))
            continue
        base = name.removesuffix("_c") if name.endswith("_c") else name
        spec = MODELLED.get(base) if name not in SPECIAL else None
        if name in SPECIAL:
            plan.modelled.append(name)
            wrapped.append((name, None))
        elif spec is not None:
            if len(spec.names.split()) != len(proto.params):
                raise GenError(f"MPI_{name} has {len(proto.params)} parameters in mpi.h, "
                               f"the tracer expects {len(spec.names.split())} ({spec.names})")
            plan.modelled.append(name)
            wrapped.append((name, spec))
        else:
            plan.other.append(name)
            wrapped.append((name, None))
    return wrapped


def core_source() -> str:
    """tracer_core.c with iw_ops.h pasted in place of its #include (line markers kept right)."""
    core = CORE.read_text()
    include = f'#include "{OPS_H.name}"\n'
    if core.count(include) != 1:
        raise RuntimeError(f"{CORE.name} must include {OPS_H.name} once")
    before, after = core.split(include)
    line = before.count("\n") + 2
    return f'{before}#line 1 "{OPS_H.name}"\n{OPS_H.read_text()}#line {line} "{CORE.name}"\n{after}'


def generate(mpicc: str) -> tuple[str, Plan]:
    """C source of the tracer for the MPI behind `mpicc`, and what it wraps."""
    text, macros = preprocess(mpicc)
    protos = parse_header(text)
    if "PMPI_Send" not in protos or "MPI_Send" not in protos:
        raise GenError(f"{mpicc}: no MPI_Send/PMPI_Send prototype found in mpi.h (is this an MPI compiler wrapper?)")
    plan = Plan()
    wrapped = plan_functions(protos, macros, plan)
    syms = fortran_symbols(mpicc, plan)
    plan.mpi = identify(mpicc, plan.fortran_libs)
    idx = {name: i for i, (name, _) in enumerate(wrapped)}
    large = any(n.endswith("_c") and n[:-2] in MODELLED for n, _ in wrapped)

    out = [f"/* Generated by idlewave/trace/gen_tracer.py from {mpicc}'s mpi.h: do not edit.\n"
           f" * {plan.summary()}. */",
           "#include <mpi.h>",
           *identity_config(plan.mpi),
           f"#define IW_NFUNCS {max(len(wrapped), 1)}",
           "static const char *const iw_names[] = {" + ", ".join(f'"MPI_{n}"' for n, _ in wrapped) + "};"]
    if large:
        out.append("#define IW_HAVE_LARGE_COUNT 1")
    fortran = []
    for name, spec in wrapped:
        if name.endswith("_c"):
            continue  # large-count Fortran bindings are mpi_f08 generics with other names
        proto = protos["MPI_" + name]
        names = spec.names.split() if spec else generic_names(proto)
        for sym, reals in f_manglings(name, syms):
            if sym in macros:
                continue
            if name in SPECIAL:
                fortran.append(f_special(sym, reals, name, idx[name]))
            else:
                fortran.append(f_wrapper(sym, reals, idx[name], proto, names, spec))
            plan.fortran.append(sym)
    if fortran:
        out.append("#define IW_FORTRAN 1")
    out.append(f'#line 1 "{CORE.name}"')
    out.append(core_source())
    out.append('#line 1 "generated wrappers"')
    out.append(c_special(idx, {n: protos["MPI_" + n] for n in SPECIAL if "MPI_" + n in protos}))
    for name, spec in wrapped:
        if name in SPECIAL:
            continue
        proto = protos["MPI_" + name]
        out.append(c_wrapper(idx[name], proto, spec, name.endswith("_c")) if spec else c_generic(idx[name], proto))
    if fortran:
        out.append("/* Fortran bindings: Fortran integers must be C ints for the conversions below. */")
        out.append("typedef char iw_fint_is_int[sizeof(MPI_Fint) == sizeof(int) ? 1 : -1];")
        out.extend(fortran)
    out.extend(fortran_guards(set(plan.fortran) | macros))
    return "\n".join(out) + "\n", plan


# Fortran names of MPI_Init and MPI_Init_thread the tracer defines even when
# it wraps no Fortran binding (the bare lower-case ones are left to C programs).
GUARDED = [f"{base}{suffix}" for base in ("mpi_init", "mpi_init_thread") for suffix in ("_", "__", "_f08", "_f08_", "_f08__")]
GUARDED += ["MPI_INIT", "MPI_INIT_THREAD"]


def fortran_guards(defined: set[str]) -> list[str]:
    """MPI_Init from Fortran where the tracer has no Fortran wrapper: a Fortran
    application of another MPI (whose binding would call that MPI's PMPI_Init
    past the tracer), or one whose Fortran library the generator did not find.
    Either way nothing would be traced: the guard checks the libraries and
    refuses to run."""
    return [f"void {sym}(void *a, ...) {{ (void)a; iw_fortran_unwrapped(); }}" for sym in GUARDED if sym not in defined]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpicc", default="mpicc", help="the MPI compiler wrapper whose mpi.h to wrap")
    ap.add_argument("-o", "--output", default="-", help="C file to write (default: stdout)")
    ap.add_argument("--list", action="store_true", help="print what is wrapped and how, not the source")
    a = ap.parse_args(argv)
    try:
        src, plan = generate(a.mpicc)
    except GenError as e:
        print(f"gen_tracer: {e}", file=sys.stderr)
        return 2
    if a.list:
        print(plan.summary())
        print("modelled:", " ".join(plan.modelled))
        print("other:", " ".join(plan.other))
        print("local:", " ".join(n for n, _ in plan.local))
        print("skipped:", " ".join(f"{n} ({why})" for n, why in plan.skipped))
        print("fortran libraries:", " ".join(plan.fortran_libs) or "none")
        if plan.mpi:
            print(f"built for: {plan.mpi.name} ({plan.mpi.library or 'libmpi not found'})")
        return 0
    if a.output == "-":
        sys.stdout.write(src)
    else:
        Path(a.output).write_text(src)
        print(plan.summary(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
