// MPI for sweeps across machines, built in when CMake finds MPI (STEPCAST_WITH_MPI); without it
// the same calls describe one process. Only what run() needs: ranks, and byte messages to rank 0.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "stepcast/sweep/sweep.hpp"
#include "sweep/ranks.hpp"

#ifdef STEPCAST_WITH_MPI
#include <mpi.h>
#endif

namespace stepcast::sweep {

namespace {
/// mpirun (OpenMPI, MPICH/Hydra, PMIx launchers) sets these for every process it starts.
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}
}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
#ifdef STEPCAST_WITH_MPI
  if (launched_by_mpirun()) {
    MPI_Init(&argc, &argv);
    started_ = true;
  }
#else
  (void)argc;
  (void)argv;
  (void)launched_by_mpirun;
#endif
}

MpiSession::~MpiSession() {
#ifdef STEPCAST_WITH_MPI
  if (started_) MPI_Finalize();
#endif
}

Ranks process_ranks() {
  Ranks r;
#ifdef STEPCAST_WITH_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  }
#endif
  return r;
}

namespace detail {

void send_to_root(int tag, const std::string& bytes) {
#ifdef STEPCAST_WITH_MPI
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, tag, MPI_COMM_WORLD);
#else
  (void)tag;
  (void)bytes;
  throw std::logic_error("send_to_root without MPI");
#endif
}

std::string receive_at_root(int from, int tag) {
#ifdef STEPCAST_WITH_MPI
  MPI_Status status;
  MPI_Probe(from, tag, MPI_COMM_WORLD, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(static_cast<size_t>(count), '\0');
  MPI_Recv(bytes.data(), count, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return bytes;
#else
  (void)from;
  (void)tag;
  throw std::logic_error("receive_at_root without MPI");
#endif
}

std::vector<std::string> all_gather(const std::string& bytes) {
#ifdef STEPCAST_WITH_MPI
  const Ranks ranks = process_ranks();
  if (ranks.size > 1) {
    const int mine = static_cast<int>(bytes.size());
    std::vector<int> sizes(static_cast<size_t>(ranks.size)), offsets(static_cast<size_t>(ranks.size));
    MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < ranks.size; ++r) {
      offsets[static_cast<size_t>(r)] = total;
      total += sizes[static_cast<size_t>(r)];
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                   MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int r = 0; r < ranks.size; ++r) {
      out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                               static_cast<size_t>(sizes[static_cast<size_t>(r)])));
    }
    return out;
  }
#endif
  return {bytes};
}

}  // namespace detail
}  // namespace stepcast::sweep
