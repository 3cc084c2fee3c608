// import_hf: a Hugging Face model directory (config.json, model.safetensors or its sharded files
// with model.safetensors.index.json, tokenizer.json) converted into a Headroom run directory with
// one checkpoint, <out>/checkpoints/step_00000000.h5 + latest, stage "import". Conversion (rather
// than every stage reading Hugging Face directories) because every stage then reads one format with
// its parallel-HDF5 writes, tensor-parallel slicing, checksums and lineage.
//
// Under MPI with --parallel.tp N each rank builds only its tensor-parallel slice of the model and
// fills it from the mapped safetensors (app/hf_config.h names the tensors), then all ranks write the
// checkpoint collectively, so a model larger than one node's memory converts.
#pragma once

namespace headroom::app {

// The whole program; returns the exit status (0, or 2 through mpi_main on an error).
int run_import_hf(int argc, char** argv);

}  // namespace headroom::app
