// An array of two billion elements: stopped at the memory cap instead of taking the machine.
{
  apiVersion: "trainc/v1",
  kind: "TrainingSystem",
  name: "hostile",
  labels: { n: std.toString(std.length(std.makeArray(2000000000, function(i) i))) },
}
