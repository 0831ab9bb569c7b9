// Seed 004's system: NVIDIA Triton serving the models of a GCS bucket on a T4 pool, behind the
// Istio ingress gateway, scraped by Managed Prometheus and autoscaled on its request queue; and
// TPU v5e training on two 2x4 slices behind Kueue: a single-slice JobSet and a multislice one.
// The cluster is in us-central1-a, a zone with both T4 GPUs and TPU v5e. The seed's TPU v4 is
// offered only in us-central2-b, which has neither, so v4 training is a system of its own there.
// The seed's mistakes are not repeated: no one is made project owner (Triton's service account
// may only read the model bucket), and the bucket lives in the cluster's region.
local t = import 'trainc.libsonnet';

t.system(
  'triton-tpu',
  // Seed 004 provisions with Cloud Build and Terraform: remote state in a bucket of its own, and
  // a VPC network and subnet (its NETWORK_NAME and SUBNET_NAME) for a VPC-native cluster.
  gcp=t.gcp('jk-mlops-dev', 'us-central1', zone='us-central1-a') + {
    state: { bucket: 'jk-mlops-dev-tf-state', prefix: 'jax-to-ft-demo' },
    network: { name: 'jk-gke-network', subnet: 'jk-gke-subnet' },
  },
  cluster='jk-ft-gke',
  pools={
    // Istio's control plane and ingress gateway, the metrics adapter and GKE's own services run
    // here rather than on the accelerator nodes.
    system: t.machinePool('e2-standard-4'),
    triton: t.gpuPool('n1-standard-4', 'nvidia-tesla-t4', 1) + { autoscaling: { min: 1, max: 3 } },
    // Two v5e 2x4 slices (node pools tpu-v5e-0 and tpu-v5e-1), 2 hosts of 4 chips each.
    'tpu-v5e': t.tpuPool('ct5lp-hightpu-4t', '2x4') + { provisioning: 'spot', tpu+: { slices: 2 } },
  },
  storage={ models: t.gcs('jk-triton-repository') },
  pipeline=[
    // JAX on one slice: a JobSet of one Indexed Job, one pod per host, each with all 4 chips.
    // The image's own user (root) opens the TPU devices: Pod Security 'baseline', not 'restricted'.
    t.command('finetune', 'us-docker.pkg.dev/jk-mlops-dev/training/jax-tpu:1.0',
              ['python3', 'train.py', '--model=base'], pool='tpu-v5e') + {
      timeout: '12h',
      retries: 3,
      security: { level: 'baseline', reason: 'JAX opens the TPU devices (/dev/vfio) as the image user, root' },
    },
    // Multislice: both slices, 4 hosts in all, meeting over the data-center network. Kueue starts
    // it once both slices are free.
    t.command('pretrain', 'us-docker.pkg.dev/jk-mlops-dev/training/jax-tpu:1.0',
              ['python3', 'train.py', '--model=large'], pool='tpu-v5e') + {
      slices: 2,
      timeout: '24h',
      security: { level: 'privileged', reason: 'multislice JAX talks between slices over the host network' },
    },
  ],
  istio={},
  // Kueue admits each TPU JobSet whole, when every slice it spans is free.
  queue={},
  services={
    // The repository is filled before Triton starts: models/ holds the seed's densenet_onnx
    // (config.pbtxt and labels, from Triton's examples; NOTICE.md), and its 32 MB model.onnx, kept
    // in Git LFS upstream, is downloaded through a pinned commit and checked against the SHA-256
    // its LFS pointer records.
    triton: t.triton(t.store('models', '/'),
                     pool='triton',
                     models=['densenet_onnx'],
                     autoscaling={ min: 1, max: 3 },
                     gateway=t.gateway(),
                     source=t.repositorySource('models', fetch=[t.fetched(
                       'https://github.com/onnx/models/raw/b1eeaa1ac722dcc1cd1a8284bde34393dab61c3d/validated/vision/classification/densenet-121/model/densenet-7.onnx',
                       '79c3bc0974696a2ea9efd2f7bca19fdd630834bd0086f1b4a1c3db3dce3b2a51',
                       'densenet_onnx/1/model.onnx'
                     )])) + { identity: t.identity('triton-sa') },
  },
) + {
  // ci/cloudbuild/provision.yaml and destroy.yaml: the seed's two builds, run as a service account
  // with the roles the runbook lists instead of the seed's roles/owner.
  ci: {
    cloudbuild: {
      serviceAccount: 'triton-provisioner@jk-mlops-dev.iam.gserviceaccount.com',
      machineType: 'e2-highcpu-32',
      timeout: '2h',
    },
  },
}
