// An array of 100 million numbers: stopped at the memory cap instead of taking the machine.
{
  apiVersion: "trainc/v1",
  kind: "TrainingSystem",
  name: "hostile",
  labels: { n: std.toString(std.length(std.range(0, 100000000))) },
}
