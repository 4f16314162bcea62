// tfhadoop JVM build. Java only (no Scala in our artifacts), so one jar serves Spark 3.5 (Scala 2.12)
// and Spark 4.x (Scala 2.13), and the Hadoop side keeps Java 8 bytecode.
ThisBuild / organization := "io.tfhadoop"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.16"
ThisBuild / crossPaths := false
ThisBuild / autoScalaLibrary := false
ThisBuild / javacOptions ++= Seq("-encoding", "UTF-8", "-Xlint:unchecked")
ThisBuild / Test / parallelExecution := false

val hadoopVersion = "3.5.0" // the Hadoop client inside pyspark 4.3.0

// The embedded cluster launcher: MiniDFSCluster + MiniYARNCluster in one JVM. Not part of the user
// jar; `writeClusterClasspath` records its runtime classpath (and the client classpath that YARN
// containers and Skein use) for `tfhadoop cluster up`.
lazy val writeClusterClasspath = taskKey[File]("Write the embedded cluster's classpath files into jars/")

lazy val cluster = (project in file("yarn/cluster"))
  .settings(
    name := "tfhadoop-cluster",
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion,
      "org.apache.hadoop" % "hadoop-client-api" % hadoopVersion,
      "org.apache.hadoop" % "hadoop-client-runtime" % hadoopVersion,
      "org.slf4j" % "slf4j-reload4j" % "1.7.36",
      "ch.qos.reload4j" % "reload4j" % "1.2.25",
      // MiniYARNCluster's constructor calls Hadoop's GenericTestUtils, which needs JUnit 5 on the classpath.
      "org.junit.jupiter" % "junit-jupiter-api" % "5.11.4",
      // The shaded minicluster leaves BouncyCastle out; the ResourceManager needs it.
      "org.bouncycastle" % "bcprov-jdk18on" % "1.82",
      "org.bouncycastle" % "bcpkix-jdk18on" % "1.82",
      // Skein's application master registers Hadoop's AmIpFilter, which the client jars lack.
      ("org.apache.hadoop" % "hadoop-yarn-server-web-proxy" % hadoopVersion).intransitive(),
      // `cluster up --secure`: Hadoop's test KDC (Apache Kerby), as Hadoop's secure mini-cluster tests use.
      "org.apache.hadoop" % "hadoop-minikdc" % hadoopVersion,
    ),
    writeClusterClasspath := {
      val out = (ThisBuild / baseDirectory).value / "jars"
      IO.createDirectory(out)
      val own = (Compile / packageBin).value
      val cp = (Compile / fullClasspath).value.map(_.data).filter(_.getName.endsWith(".jar"))
      val client = cp.filter { f =>
        val n = f.getName
        n.startsWith("hadoop-client-api") || n.startsWith("hadoop-yarn-server-web-proxy") || n.startsWith("hadoop-client-runtime") ||
        n.startsWith("slf4j-") || n.startsWith("reload4j") || n.startsWith("commons-logging")
      }
      IO.write(out / "cluster-classpath.txt", (own +: cp).map(_.getAbsolutePath).mkString("\n") + "\n")
      IO.write(out / "client-classpath.txt", client.map(_.getAbsolutePath).mkString("\n") + "\n")
      out / "cluster-classpath.txt"
    },
  )

lazy val root = (project in file("."))
  .aggregate(cluster, tfhadoop, amAgent)
  .settings(name := "tfhadoop", publish / skip := true)

// The user jar: TFRecord for Hadoop (mapreduce + mapred), Hive and Spark (DataSource V2), Java only,
// Java 8 bytecode, compiled against Hadoop 3.3 / Spark 3.5 (all provided) so one jar runs on
// Spark 3.5 and 4.x. Sources live in the area folders connectors/ and spark/.
val sparkCompileVersion = "3.5.5"
val hadoopCompileVersion = "3.3.4" // what Spark 3.5 ships; Java 8 bytecode (Hadoop 3.5 is Java 17)
lazy val copyJar = taskKey[File]("Build the tfhadoop jar and copy it to jars/tfhadoop-<version>.jar")

lazy val tfhadoop = (project in file("target/tfhadoop-build"))
  .settings(
    name := "tfhadoop",
    Compile / unmanagedSourceDirectories := Seq(
      (ThisBuild / baseDirectory).value / "connectors" / "src" / "main" / "java",
      (ThisBuild / baseDirectory).value / "spark" / "src" / "main" / "java"),
    Compile / unmanagedResourceDirectories := Seq(
      (ThisBuild / baseDirectory).value / "connectors" / "src" / "main" / "resources",
      (ThisBuild / baseDirectory).value / "spark" / "src" / "main" / "resources"),
    Test / unmanagedSourceDirectories := Seq(
      (ThisBuild / baseDirectory).value / "connectors" / "src" / "test" / "java",
      (ThisBuild / baseDirectory).value / "spark" / "src" / "test" / "java"),
    Test / unmanagedResourceDirectories := Seq(
      (ThisBuild / baseDirectory).value / "connectors" / "src" / "test" / "resources"),
    javacOptions ++= Seq("--release", "8", "-Xlint:-options"),
    Compile / doc / javacOptions := Seq("-encoding", "UTF-8"),
    Compile / packageDoc / publishArtifact := false,
    libraryDependencies ++= Seq(
      "org.apache.hadoop" % "hadoop-client-api" % hadoopCompileVersion % Provided,
      "org.apache.hadoop" % "hadoop-client-runtime" % hadoopCompileVersion % Provided,
      ("org.apache.spark" % "spark-sql_2.12" % sparkCompileVersion % Provided).intransitive(),
      ("org.apache.spark" % "spark-sql-api_2.12" % sparkCompileVersion % Provided).intransitive(),
      ("org.apache.spark" % "spark-catalyst_2.12" % sparkCompileVersion % Provided).intransitive(),
      ("org.apache.spark" % "spark-core_2.12" % sparkCompileVersion % Provided).intransitive(),
      ("org.apache.spark" % "spark-common-utils_2.12" % sparkCompileVersion % Provided).intransitive(),
      ("org.apache.spark" % "spark-unsafe_2.12" % sparkCompileVersion % Provided).intransitive(),
      ("org.scala-lang" % "scala-library" % "2.12.18" % Provided).intransitive(),
      ("com.esotericsoftware" % "kryo-shaded" % "4.0.2" % Provided).intransitive(), // UTF8String implements KryoSerializable
      ("org.apache.hive" % "hive-serde" % "2.3.10" % Provided).intransitive(),
      ("org.apache.hive" % "hive-exec" % "2.3.10" % Provided).classifier("core").intransitive(),
      ("org.apache.hive" % "hive-common" % "2.3.10" % Provided).intransitive(),
      ("org.apache.hive" % "hive-storage-api" % "2.8.1" % Provided).intransitive(),
      "commons-logging" % "commons-logging" % "1.2" % Provided,
      "org.slf4j" % "slf4j-api" % "1.7.36" % Provided,
      "com.github.sbt" % "junit-interface" % "0.13.3" % Test,
      // tensorflow/ecosystem's Hadoop TFRecord classes, only to test interop with the peer
      ("org.tensorflow" % "tensorflow-hadoop" % "1.15.0" % Test).intransitive(),
      "org.slf4j" % "slf4j-simple" % "1.7.36" % Test,
    ),
    testOptions += Tests.Argument(TestFrameworks.JUnit, "-q", "-v"),
    Test / fork := true,
    copyJar := {
      val jar = (Compile / packageBin).value
      val out = (ThisBuild / baseDirectory).value / "jars" / s"tfhadoop-${version.value}.jar"
      IO.copyFile(jar, out)
      out
    },
  )

// The application master agent (yarn/am-agent): a Java agent the job's master spec loads into Skein's
// application master JVM so that YARN's preemption warnings (AllocateResponse.getPreemptionMessage)
// reach the job master (trainer/python/tfhadoop/trainer/master.py). Java 8 bytecode against Hadoop 3.3 (provided),
// public Hadoop APIs only: it runs in whatever Hadoop the cluster's containers have.
lazy val copyAgentJar = taskKey[File]("Build the AM agent jar and copy it to jars/am-agent.jar")

lazy val amAgent = (project in file("yarn/am-agent"))
  .settings(
    name := "tfhadoop-am-agent",
    javacOptions ++= Seq("--release", "8", "-Xlint:-options"),
    Compile / doc / javacOptions := Seq("-encoding", "UTF-8"),
    Compile / packageDoc / publishArtifact := false,
    libraryDependencies ++= Seq(
      "org.apache.hadoop" % "hadoop-client-api" % hadoopCompileVersion % Provided,
      "org.apache.hadoop" % "hadoop-client-runtime" % hadoopCompileVersion % Provided,
      "commons-logging" % "commons-logging" % "1.2" % Provided,
      "org.slf4j" % "slf4j-api" % "1.7.36" % Provided,
      "com.github.sbt" % "junit-interface" % "0.13.3" % Test,
      "org.slf4j" % "slf4j-simple" % "1.7.36" % Test,
    ),
    Compile / packageBin / packageOptions += Package.ManifestAttributes("Premain-Class" -> "tfhadoop.amagent.Agent"),
    testOptions += Tests.Argument(TestFrameworks.JUnit, "-q", "-v"),
    Test / fork := true,
    copyAgentJar := {
      val jar = (Compile / packageBin).value
      val out = (ThisBuild / baseDirectory).value / "jars" / "am-agent.jar"
      IO.copyFile(jar, out)
      out
    },
  )

// `tools/sbt jars`: the user jar, the AM agent and the embedded cluster's classpath files, into jars/.
addCommandAlias("jars", ";tfhadoop/copyJar;amAgent/copyAgentJar;cluster/writeClusterClasspath")
