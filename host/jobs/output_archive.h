// The model and output archives of a training job: SageMaker aggregates every host's /opt/ml/model
// into one model.tar.gz and every host's /opt/ml/output/data into one output.tar.gz at the end of
// the job ("If multiple containers ... write to this directory they should ensure no file/directory
// names clash"). Here the hosts' folders are merged in host order: a name that an earlier host
// already gave is left out and reported.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"

namespace vigil::jobs {

struct MergeReport {
  uint64_t files = 0;  // regular files and symbolic links taken
  uint64_t bytes = 0;  // of the regular files' contents
  std::vector<std::string> clashes;  // "<relpath> (<root>)": a later root's entry of a name already taken
  std::vector<std::string> skipped;  // "<path>: <why>": what was not taken, or not whole
};

// Writes `archive`, published by rename (named "<archive>.tmp" until it is complete): a gzip-compressed
// POSIX tar of everything under `roots`, merged. Entries are named relative to their root ("model.pt",
// "sub/", "sub/w.bin"); folders, regular files and symbolic links (as links: never followed) are
// kept with their permission bits and modification times, owner 0:0; other kinds (FIFOs, sockets,
// devices), folders deeper than 64 and roots that are not folders (a symbolic link included) are
// skipped. ustar headers, with pax records for names and link targets over 100 bytes and for files
// of 8 GiB or more. A missing root adds nothing. A file that shrinks while it is read is padded with
// zeros to the size its header gave, and reported in `skipped`. Io / internal errors for what cannot
// be read or written (the temporary file is then removed).
[[nodiscard]] Result<MergeReport> write_merged_tar_gz(std::span<const std::filesystem::path> roots,
                                                      const std::filesystem::path& archive);

// Copies everything under `roots` into `folder` (made when missing), merged the same way: the
// uncompressed model of CompressionType NONE. Only folders and regular files are copied (an object
// store holds no links), and only 30 folders deep (what the uploader walks); symbolic links, other
// kinds and deeper folders are reported in `skipped`.
[[nodiscard]] Result<MergeReport> copy_merged(std::span<const std::filesystem::path> roots,
                                              const std::filesystem::path& folder);

}  // namespace vigil::jobs
