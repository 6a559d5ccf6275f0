// Several nodetool commands in one client JVM (`nodetoolBatch` in nodetool.ts): on a busy 2-core
// machine each JVM start costs seconds of CPU, and a bench that reads a table's histograms one
// table at a time started eleven. Run in Java's source-file mode on the server's classpath:
//   java -cp <lib/*> NodeToolBatch.java <host> <port> <command…> -- <command…> -- …
// Each command runs through Cassandra's own NodeTool (as `nodetool -h host -p port command…`),
// and a line `@@nodetool-exit <code>` follows its output.
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.cassandra.tools.INodeProbeFactory;
import org.apache.cassandra.tools.NodeProbe;
import org.apache.cassandra.tools.NodeTool;
import org.apache.cassandra.tools.Output;

public class NodeToolBatch {
  public static void main(String[] args) {
    INodeProbeFactory probes = new INodeProbeFactory() {
      public NodeProbe create(String host, int port) throws IOException {
        return new NodeProbe(host, port);
      }

      public NodeProbe create(String host, int port, String user, String password) throws IOException {
        return new NodeProbe(host, port, user, password);
      }
    };
    List<String> command = new ArrayList<>();
    for (int i = 2; i <= args.length; i++) {
      if (i < args.length && !args[i].equals("--")) {
        command.add(args[i]);
        continue;
      }
      if (command.isEmpty()) continue;
      List<String> full = new ArrayList<>(List.of("-h", args[0], "-p", args[1]));
      full.addAll(command);
      int code = new NodeTool(probes, Output.CONSOLE).execute(full.toArray(new String[0]));
      System.out.println("@@nodetool-exit " + code);
      System.out.flush();
      command.clear();
    }
    System.exit(0);
  }
}
