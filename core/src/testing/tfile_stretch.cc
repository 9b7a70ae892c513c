// WriteStretchedTfile (tfile_fixtures.h): a gdb-written tfile repeated to
// any number of frames, through TfileWriter.
#include <memory>
#include <string>

#include "backstep/core/byte_source.h"
#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"
#include "formats/tfile/tfile_writer.h"

namespace backstep::core::testing {

Status WriteStretchedTfile(const std::string& sample_path, const std::string& out_path,
                           std::uint64_t frames, std::uint64_t block_size) {
  BACKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<const ByteSource> source, MapFile(sample_path));
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TfileReader> sample, TfileReader::Open(source));
  if (sample->frame_count() == 0) {
    return Status::InvalidArgument(sample_path + ": no frame to repeat");
  }
  // gdbserver's block on an x86-64 host: core..avx, plus avx512 when the
  // CPU has it (the layouts gdb names in the tdesc the writer adds).
  TfileWriterOptions options;
  const std::uint64_t sample_block = sample->layout().block_size();
  const std::uint64_t block = block_size != 0 ? block_size : sample_block;
  for (std::uint32_t features : {kDefaultX86_64Features, kDefaultX86_64Features | kFeatureAvx512}) {
    if (X86_64().GdbBlockSize(features) == block) options.features = features;
  }
  if (X86_64().GdbBlockSize(options.features) != block) {
    return Status::Unsupported(sample_path + ": register block of " + std::to_string(block) +
                               " bytes (expected gdb's amd64 816 or 2416)");
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TfileWriter> writer,
                            TfileWriter::Create(out_path, options));
  BACKSTEP_RETURN_IF_ERROR(writer->WriteDefinitions(sample->tsvs(), sample->tracepoints()));
  const RegisterId rax = *X86_64().Find("rax");
  for (std::uint64_t n = 0; n < frames; ++n) {
    const std::uint64_t from = n % sample->frame_count();
    BACKSTEP_ASSIGN_OR_RETURN(TfileFrame frame, sample->ReadFrame(from));
    writer->BeginFrame(frame.header.tpnum);
    if (frame.register_blocks != 0) {
      // Through the arch table: the layouts differ past the avx registers.
      BACKSTEP_ASSIGN_OR_RETURN(RegisterFile registers, sample->FrameRegisters(from));
      registers.SetU64(rax, n);
      writer->AddRegisters(registers);
    }
    for (const TfileMemoryBlock& m : frame.memory) writer->AddMemory(m.address, m.data);
    for (const TfileTsvValue& v : frame.tsv_values) writer->AddTsvValue(v.number, v.value);
    BACKSTEP_RETURN_IF_ERROR(writer->EndFrame());
  }
  return writer->Finish();
}

}  // namespace backstep::core::testing
