// Seed 004's infrastructure: a T4 pool for Triton serving and TPU slice pools for training
// (a v4 2x2x2 slice of two hosts and a v5e 2x4 slice on 4-chip hosts), with the model
// repository bucket read through Workload Identity. Serving and JobSets come with their engines.
local t = import 'trainc.libsonnet';

t.system(
  'triton-tpu',
  gcp=t.gcp('jk-mlops-dev', 'us-central2', zone='us-central2-b'),
  cluster='jk-ft-gke',
  pools={
    triton: t.gpuPool('n1-standard-4', 'nvidia-tesla-t4', 1),
    'tpu-v4': t.tpuPool('ct4p-hightpu-4t', '2x2x2'),
    'tpu-v5e': t.tpuPool('ct5lp-hightpu-4t', '2x4') + { provisioning: 'spot' },
  },
  storage={ models: t.gcs('jk-triton-repository') },
  identity=t.identity('triton-sa'),
)
