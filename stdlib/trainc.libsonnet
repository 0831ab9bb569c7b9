// trainc.libsonnet: helpers for writing trainc/v1 specs in Jsonnet.
//
//   local t = import 'trainc.libsonnet';
//   t.system('mnist', pools={...}, pipeline=[t.torchrun('train', image, 'mnist.py')])
//
// Every helper returns plain data and leaves out the keys you did not set, so the result is
// what you would have written in YAML and validates against schemas/trainc.v1.schema.json.
// Add any other field with `+`: t.torchrun(...) + { shm: '4Gi', retries: 0 }.

// Drops the fields whose value is null (shallow: nested values are left as given).
local compact(o) = { [k]: o[k] for k in std.objectFields(o) if o[k] != null };

{
  // The whole document: fills in apiVersion and kind; `pools` becomes cluster.pools and
  // `cluster` (a name) cluster.name.
  system(name,
         pipeline=null,
         namespace=null,
         serviceAccount=null,
         labels=null,
         gcp=null,
         cluster=null,
         pools=null,
         storage=null,
         identity=null,
         clusters=null,
         services=null,
         istio=null,
         queue=null)::
    compact({
      apiVersion: 'trainc/v1',
      kind: 'TrainingSystem',
      name: name,
      namespace: namespace,
      serviceAccount: serviceAccount,
      labels: labels,
      gcp: gcp,
      cluster: if pools == null && cluster == null then null else compact({ name: cluster, pools: pools }),
      storage: storage,
      identity: identity,
      clusters: clusters,
      istio: istio,
      queue: queue,
      services: services,
      pipeline: pipeline,
    }),

  // Where the cloud side lives; omit zone for a regional cluster.
  gcp(project, region, zone=null):: compact({ project: project, region: region, zone: zone }),

  // A Kubernetes service account bound to a Google one with Workload Identity.
  identity(serviceAccount, gcpServiceAccount=null)::
    compact({ serviceAccount: serviceAccount, gcpServiceAccount: gcpServiceAccount }),

  // A storage entry backed by a GCS bucket, mounted into steps with GCS FUSE.
  gcs(bucket, prefix=null, location=null, versioning=null, create=null, readOnly=null):: {
    gcs: compact({
      bucket: bucket,
      prefix: prefix,
      location: location,
      versioning: versioning,
      create: create,
      readOnly: readOnly,
    }),
  },

  // A CPU-only node pool of `nodes` machines (nodes defaults to 1 in the compiler).
  pool(machine, nodes=null):: compact({ machine: machine, nodes: nodes }),

  // A node pool of machines with built-in GPUs (a4-, a3-, a2-, g2-): the catalog knows the GPUs.
  machinePool(machine, nodes=null):: compact({ machine: machine, nodes: nodes }),

  // A TPU slice pool: `topology` decides the hosts (nodes) with the machine's chips per host.
  tpuPool(machine, topology):: { machine: machine, tpu: { topology: topology } },

  // A GPU node pool: `count` GPUs of type `accelerator` attached to each of `nodes` N1 machines.
  gpuPool(machine, accelerator, count, nodes=null)::
    compact({ machine: machine, accelerator: { type: accelerator, count: count }, nodes: nodes }),

  // A storage entry backed by an S3 bucket (for the `storage` map).
  s3(bucket, prefix=null, region=null, endpoint=null, credentialsSecret=null):: {
    s3: compact({
      bucket: bucket,
      prefix: prefix,
      region: region,
      endpoint: endpoint,
      credentialsSecret: credentialsSecret,
    }),
  },

  // A store reference "store:/path"; a leading '/' on path is optional: store('data', 'x/') == 'data:/x/'.
  store(name, path=''):: name + ':/' + std.lstripChars(path, '/'),

  // A step that runs `script` under torchrun; the compiler adds the distributed flags.
  torchrun(name,
           image,
           script,
           args=null,
           port=null,
           pool=null,
           nodes=null,
           gpus=null,
           procsPerNode=null,
           needs=null,
           env=null)::
    compact({
      name: name,
      needs: needs,
      image: image,
      pool: pool,
      nodes: nodes,
      gpus: gpus,
      procsPerNode: procsPerNode,
      torchrun: compact({ script: script, args: args, port: port }),
      env: env,
    }),

  // A step that runs a plain command (argv list, no shell).
  command(name, image, command, pool=null, nodes=null, gpus=null, needs=null, env=null)::
    compact({
      name: name,
      needs: needs,
      image: image,
      pool: pool,
      nodes: nodes,
      gpus: gpus,
      command: command,
      env: env,
    }),

  // One entry of a step's `inputs`: copy store reference `from` to path `to` before the run.
  input(from, to):: { from: from, to: to },

  // A step's `outputs`: sync path `path` to store reference `to` every `every` (default 10m).
  outputs(path, to, every=null):: compact({ path: path, to: to, every: every }),

  // A step's `checkpoints`: files matching `pattern` under `path` (inside outputs.path), written
  // `every` (a duration of training between two writes), each write taking `cost`.
  checkpoints(path, pattern=null, resumeFlag=null, every=null, cost=null)::
    compact({ path: path, pattern: pattern, resumeFlag: resumeFlag, every: every, cost: cost }),

  // A Triton model server reading `repository` (a store reference, t.store('models', '/repo'));
  // `models` are checked ready after deployment; `autoscaling` is {min, max} or null for fixed
  // `replicas`; `gateway` (t.gateway(...)) exposes it through the Istio ingress gateway; `source`
  // (t.repositorySource(...)) is what the scripts upload into the repository before it starts.
  triton(repository, pool=null, models=null, replicas=null, autoscaling=null, gpus=null, gateway=null, source=null)::
    compact({
      pool: pool,
      triton: compact({ repository: repository, models: models, source: source }),
      replicas: replicas,
      autoscaling: autoscaling,
      gpus: gpus,
      expose: if gateway == null then null else { gateway: gateway },
    }),

  // A service's route through the Istio ingress gateway, for `hosts` (default: any host).
  gateway(hosts=null):: compact({ hosts: hosts }),

  // A model repository's contents: `from` is a folder beside the spec or gs://bucket/path, and
  // `fetch` files (t.fetched(...)) too large to commit, each checked against its SHA-256.
  repositorySource(from=null, fetch=null):: compact({ from: from, fetch: fetch }),

  // A file downloaded from `url` to path `to` of the repository, pinned by its `sha256`.
  fetched(url, sha256, to):: { url: url, sha256: sha256, to: to },
}
