/*
 * `harness conform`'s side of Kafka: one topic with one partition, held by Kafka's own controller managers
 * (ReplicationControlManager built with its real ClusterControlManager, FeatureControlManager and
 * ConfigurationControlManager over one SnapshotRegistry), driven one controller-level action at a time.
 *
 * It lives in Kafka's package because the managers' builders and the methods the controller calls
 * (handleBrokerFenced, alterPartition, ...) are package-private. It is compiled by `make kafka` against each
 * version's jars (.kafka/<version>/adapter.jar). Every action replays the records Kafka generated into the
 * managers, as QuorumController does once they are committed, and answers with one int array (the state after,
 * see `state()`), so Python crosses into the JVM once per action (docs/ARCHITECTURE.md, "Kafka's own code").
 *
 * The few calls whose signatures differ between the versions kafka/versions.txt lists (the LogContext
 * package, the ELR switch, the shutdown handler, registerBroker's arguments) go through reflection, by name.
 */
package org.apache.kafka.controller;

import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.function.Supplier;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.FenceBrokerRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.metadata.UnfenceBrokerRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

public final class ConformAdapter {
    static final String TOPIC = "t";
    static final Uuid TOPIC_ID = new Uuid(1L, 1L);
    static final String CLUSTER_ID = "conform-cluster";
    static final String ELR_FEATURE = "eligible.leader.replicas.version";

    /** A clock that moves only when the adapter says: every registration comes a session timeout after the last
     * contact, so registerBroker never meets a live session (deterministic, unlike the wall clock). */
    static final class StepClock implements Time {
        long nanos = 1_000_000_000_000L;

        public long milliseconds() { return nanos / 1_000_000L; }
        public long nanoseconds() { return nanos; }
        public void sleep(long ms) { nanos += ms * 1_000_000L; }
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            throw new UnsupportedOperationException("the adapter never waits");
        }
    }

    final int brokers;
    final MetadataVersion metadataVersion;
    final boolean elrRequested;
    /** Whether the features include unstable versions (ELR is not stable in this Kafka version). */
    final boolean unstable;
    final StepClock clock = new StepClock();
    final SnapshotRegistry snapshots;
    final FeatureControlManager features;
    final ConfigurationControlManager configs;
    final ClusterControlManager cluster;
    final ReplicationControlManager replication;
    /** The records and response of the last action, for the divergence report. */
    final List<ApiMessageAndVersion> lastRecords = new ArrayList<>();
    Object lastResponse = "";
    long nextSnapshot = 1;

    public ConformAdapter(int brokers, int[] replicas, int[] isr, int leader, int minIsr, boolean elr, boolean unclean)
            throws ReflectiveOperationException {
        // The logging backends' start-up notices (SLF4J without a binding in 4.x, log4j without appenders in 3.9) are
        // printed on System.err while the managers are built: not the user's business; errors still raise.
        PrintStream err = System.err;
        System.setErr(new PrintStream(OutputStream.nullOutputStream()));
        try {
            org.slf4j.LoggerFactory.getILoggerFactory();  // SLF4J binds (and says so) now, not at Kafka's first log line
            this.brokers = brokers;
        this.elrRequested = elr;
        MetadataVersion mv = MetadataVersion.latestProduction();
        Object logContext = null;
        Constructor<?> registryCtor = null;
        for (Constructor<?> c : SnapshotRegistry.class.getConstructors()) {
            if (c.getParameterCount() == 1) registryCtor = c;
        }
        logContext = registryCtor.getParameterTypes()[0].getConstructor().newInstance();
        this.snapshots = (SnapshotRegistry) registryCtor.newInstance(logContext);

        // The features this controller supports (QuorumFeatures, as a controller node builds them), stable ones
        // first; where ELR is asked for but only an unstable version has it (3.9; 4.0's preview), the unstable ones.
        Map<String, VersionRange> supported = supportedFeatures(false);
        VersionRange elrRange = supported.get(ELR_FEATURE);
        boolean elrFeature = elrRange != null || hasMethod(FeatureControlManager.class, "isElrFeatureEnabled");
        this.unstable = elr && (elrFeature ? elrRange == null || elrRange.max() < 1 : !mv.isElrSupported());
        if (unstable) {
            supported = supportedFeatures(true);
            mv = MetadataVersion.latestTesting();
        }
        this.metadataVersion = mv;
        this.features = new FeatureControlManager.Builder().setSnapshotRegistry(snapshots)
            .setQuorumFeatures(new QuorumFeatures(0, supported, List.of(0))).build();
        // The two topic configs the controller reads, with Kafka's defaults (LogConfig / ServerLogConfigs).
        ConfigDef topicDef = new ConfigDef()
            .define("min.insync.replicas", ConfigDef.Type.INT, 1, ConfigDef.Importance.HIGH, "")
            .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, false, ConfigDef.Importance.HIGH, "");
        Map<ConfigResource.Type, ConfigDef> defs = new HashMap<>();
        defs.put(ConfigResource.Type.TOPIC, topicDef);
        defs.put(ConfigResource.Type.BROKER, new ConfigDef(topicDef));
        Object configBuilder = new ConfigurationControlManager.Builder()
            .setSnapshotRegistry(snapshots)
            .setKafkaConfigSchema(new KafkaConfigSchema(defs, new HashMap<>()));
        callIfPresent(configBuilder, "setFeatureControl", features);
        this.configs = ((ConfigurationControlManager.Builder) configBuilder).build();

        ClusterControlManager.Builder clusterBuilder = new ClusterControlManager.Builder()
            .setClusterId(CLUSTER_ID)
            .setTime(clock)
            .setSnapshotRegistry(snapshots)
            .setSessionTimeoutNs(1_000_000_000L)
            .setReplicaPlacer(new StripedReplicaPlacer(new Random(0)))
            .setFeatureControlManager(features);
        // The controller wires registration's shutdown handling to the ReplicationControlManager (QuorumController);
        // so does the adapter, to whichever handler this version has.
        ReplicationControlManager[] late = new ReplicationControlManager[1];
        for (Method m : ClusterControlManager.Builder.class.getDeclaredMethods()) {
            if (m.getName().startsWith("setBroker") && m.getName().endsWith("ShutdownHandler")) {
                Class<?> handler = m.getParameterTypes()[0];
                Object proxy = Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler},
                    (self, method, args) -> {
                        if (method.getDeclaringClass() == Object.class) return method.invoke(this, args);
                        if (args.length == 3) {  // 4.x: (broker, isCleanShutdown, records)
                            invoke(late[0], "handleBrokerShutdown", args);
                        } else {  // 3.9: (broker, records), on every new incarnation
                            invoke(late[0], "handleBrokerUncleanShutdown", args);
                        }
                        return null;
                    });
                m.setAccessible(true);
                m.invoke(clusterBuilder, proxy);
            }
        }
        this.cluster = clusterBuilder.build();

        ReplicationControlManager.Builder replicationBuilder = new ReplicationControlManager.Builder()
            .setSnapshotRegistry(snapshots)
            .setMaxElectionsPerImbalance(Integer.MAX_VALUE)
            .setConfigurationControl(configs)
            .setClusterControl(cluster)
            .setFeatureControl(features);
        callIfPresent(replicationBuilder, "setEligibleLeaderReplicasEnabled", elr);  // 3.9: a controller flag
        this.replication = replicationBuilder.build();
        late[0] = replication;

        List<ApiMessageAndVersion> setup = new ArrayList<>();
        setup.add(record(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
            .setFeatureLevel(mv.featureLevel())));
        if (elr && hasMethod(FeatureControlManager.class, "isElrFeatureEnabled")) {  // 4.x: a finalized feature
            setup.add(record(new FeatureLevelRecord().setName(ELR_FEATURE).setFeatureLevel((short) 1)));
        }
        replay(setup, 0);
        cluster.activate();
        for (int b = 1; b <= brokers; b++) {
            register(b, 1, -1);
            unfence(b);
        }
        List<ApiMessageAndVersion> topic = new ArrayList<>();
        topic.add(record(new TopicRecord().setName(TOPIC).setTopicId(TOPIC_ID)));
        topic.add(record(new ConfigRecord().setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName(TOPIC)
            .setName("min.insync.replicas").setValue(Integer.toString(minIsr))));
        topic.add(record(new ConfigRecord().setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName(TOPIC)
            .setName("unclean.leader.election.enable").setValue(Boolean.toString(unclean))));
        // The model's initial partition, as a snapshot or a new controller would load it: epochs 1, settled.
        topic.add(record(new PartitionRecord().setTopicId(TOPIC_ID).setPartitionId(0)
            .setReplicas(list(replicas)).setIsr(list(isr)).setLeader(leader)
            .setLeaderEpoch(1).setPartitionEpoch(1)
            .setRemovingReplicas(new ArrayList<>()).setAddingReplicas(new ArrayList<>())));
        replay(topic, 0);
        lastRecords.clear();
        } finally {
            System.setErr(err);
        }
    }

    // ------------------------------------------------------------------------------------ what is compared

    /** [leader, leader epoch, partition epoch, recovering, isr, elr, last known elr, adding, removing (bitmasks),
     *  number of replicas, the replicas in order..., then per broker 1..N: its epoch, fenced (1/0)]. */
    public int[] state() {
        PartitionRegistration p = replication.getPartition(TOPIC_ID, 0);
        if (p == null) return new int[0];  // while the constructor registers the brokers
        int[] out = new int[10 + p.replicas.length + 2 * brokers];
        out[0] = p.leader;
        out[1] = p.leaderEpoch;
        out[2] = p.partitionEpoch;
        out[3] = p.leaderRecoveryState == LeaderRecoveryState.RECOVERING ? 1 : 0;
        out[4] = mask(p.isr);
        out[5] = mask(p.elr);
        out[6] = mask(p.lastKnownElr);
        out[7] = mask(p.addingReplicas);
        out[8] = mask(p.removingReplicas);
        out[9] = p.replicas.length;
        System.arraycopy(p.replicas, 0, out, 10, p.replicas.length);
        int i = 10 + p.replicas.length;
        for (int b = 1; b <= brokers; b++) {
            BrokerRegistration r = cluster.registration(b);
            out[i++] = (int) r.epoch();
            out[i++] = r.fenced() ? 1 : 0;
        }
        return out;
    }

    public boolean unstableFeatures() {
        return unstable;
    }

    @SuppressWarnings("unchecked")
    static Map<String, VersionRange> supportedFeatures(boolean enableUnstable) throws ReflectiveOperationException {
        // defaultSupportedFeatureMap in 4.x, defaultFeatureMap in 3.9
        for (Method m : QuorumFeatures.class.getMethods()) {
            if (m.getName().startsWith("default") && m.getName().endsWith("FeatureMap")) {
                return (Map<String, VersionRange>) m.invoke(null, enableUnstable);
            }
        }
        throw new NoSuchMethodException("QuorumFeatures.default*FeatureMap");
    }

    public String metadataVersion() {
        return metadataVersion.version();
    }

    /** Whether the partition changes run with ELR: a finalized feature in 4.x, a controller flag in 3.9. */
    public boolean elrEnabled() throws ReflectiveOperationException {
        if (hasMethod(FeatureControlManager.class, "isElrFeatureEnabled")) {
            return (Boolean) invoke(features, "isElrFeatureEnabled", new Object[0]);
        }
        return (Boolean) invoke(replication, "isElrEnabled", new Object[0]);
    }

    public String lastRecords() {
        StringBuilder text = new StringBuilder();  // on demand: only a divergence is reported
        for (ApiMessageAndVersion r : lastRecords) text.append(text.length() == 0 ? "" : "\n").append(r.message());
        return text.toString();
    }

    public String lastResponse() {
        return lastResponse.toString();
    }

    // ------------------------------------------------------------------------- snapshots (SnapshotRegistry)

    /** A snapshot of the managers' state now; its id for `revert`. */
    public long mark() throws ReflectiveOperationException {
        long id = nextSnapshot++;
        // public as idempotentCreateSnapshot in 4.x, as getOrCreateSnapshot in 3.9
        invoke(snapshots, hasMethod(SnapshotRegistry.class, "idempotentCreateSnapshot")
            ? "idempotentCreateSnapshot" : "getOrCreateSnapshot", new Object[] {id});
        return id;
    }

    /** Back to snapshot `id`; the snapshots taken after it are dropped. */
    public void revert(long id) {
        snapshots.revertToSnapshot(id);
    }

    // --------------------------------------------------------------------- the controller-level actions

    /** AlterPartitionReassignments for partition 0: `target` (null: cancel). Answers [error code] + state(). */
    public int[] reassign(int[] target) {
        AlterPartitionReassignmentsRequestData.ReassignablePartition part =
            new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(0)
                .setReplicas(target == null ? null : list(target));
        AlterPartitionReassignmentsRequestData request = new AlterPartitionReassignmentsRequestData();
        AlterPartitionReassignmentsRequestData.ReassignableTopic topic =
            new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName(TOPIC);
        topic.partitions().add(part);
        request.topics().add(topic);
        ControllerResult<AlterPartitionReassignmentsResponseData> result = replication.alterPartitionReassignments(request);
        short error = result.response().responses().get(0).partitions().get(0).errorCode();
        lastResponse = result.response();
        return concat(new int[] {error}, withState(result.records(), -1));
    }

    /** AlterPartition from `broker` (its broker epoch), for partition 0 at the epochs it knows, asking for `isr`
     *  (each member with the broker epoch the leader saw, -1 for none), leader recovery state RECOVERED.
     *  Answers [error code, leader, leader epoch, partition epoch, isr (bitmask)] + state(). */
    public int[] alterPartition(int broker, long brokerEpoch, int leaderEpoch, int partitionEpoch, int[] isr,
                                long[] memberEpochs) {
        AlterPartitionRequestData.PartitionData part = new AlterPartitionRequestData.PartitionData()
            .setPartitionIndex(0).setLeaderEpoch(leaderEpoch).setPartitionEpoch(partitionEpoch)
            .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED.value());
        for (int i = 0; i < isr.length; i++) {
            part.newIsrWithEpochs().add(new AlterPartitionRequestData.BrokerState()
                .setBrokerId(isr[i]).setBrokerEpoch(memberEpochs[i]));
        }
        AlterPartitionRequestData.TopicData topic = new AlterPartitionRequestData.TopicData().setTopicId(TOPIC_ID);
        topic.partitions().add(part);
        AlterPartitionRequestData request = new AlterPartitionRequestData().setBrokerId(broker).setBrokerEpoch(brokerEpoch);
        request.topics().add(topic);
        short version = ApiKeys.ALTER_PARTITION.latestVersion();
        ControllerRequestContext context = new ControllerRequestContext(
            new RequestHeaderData().setRequestApiKey(ApiKeys.ALTER_PARTITION.id).setRequestApiVersion(version),
            KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
        int[] answer = new int[5];
        List<ApiMessageAndVersion> records = new ArrayList<>();
        try {
            ControllerResult<AlterPartitionResponseData> result = replication.alterPartition(context, request);
            records = result.records();
            AlterPartitionResponseData.PartitionData r = result.response().topics().get(0).partitions().get(0);
            answer[0] = result.response().errorCode() != 0 ? result.response().errorCode() : r.errorCode();
            answer[1] = r.leaderId();
            answer[2] = r.leaderEpoch();
            answer[3] = r.partitionEpoch();
            answer[4] = mask(r.isr().stream().mapToInt(Integer::intValue).toArray());
            lastResponse = result.response();
        } catch (ApiException e) {  // checkBrokerEpoch throws: the whole request fails (STALE_BROKER_EPOCH)
            answer[0] = Errors.forException(e).code();
            lastResponse = Errors.forException(e).name() + ": " + e.getMessage();
        }
        return concat(answer, withState(records, -1));
    }

    /** The controller fences `broker`: missed heartbeats (maybeFenceOneStaleBroker), or the SHUTDOWN_NOW step of a
     *  controlled shutdown (processBrokerHeartbeat); both call handleBrokerFenced. */
    public int[] fence(int broker) {
        List<ApiMessageAndVersion> records = new ArrayList<>();
        replication.handleBrokerFenced(broker, records);
        lastResponse = "";
        return withState(records, -1);
    }

    /** A controlled shutdown, as processBrokerHeartbeat moves an unfenced broker through it: CONTROLLED_SHUTDOWN
     *  (handleBrokerInControlledShutdown), then SHUTDOWN_NOW (handleBrokerFenced). A fenced broker goes straight
     *  to SHUTDOWN_NOW (BrokerHeartbeatManager.calculateNextBrokerState). */
    public int[] controlledShutdown(int broker) {
        List<ApiMessageAndVersion> records = new ArrayList<>();
        BrokerRegistration registration = cluster.registration(broker);
        if (!registration.fenced()) {
            replication.handleBrokerInControlledShutdown(broker, registration.epoch(), records);
            replay(records, -1);
        }
        List<ApiMessageAndVersion> fenced = new ArrayList<>();
        replication.handleBrokerFenced(broker, fenced);
        lastRecords.clear();
        records.addAll(fenced);
        replay(fenced, -1);
        lastRecords.addAll(records);
        lastResponse = "";
        return state();
    }

    /** The controller unfences `broker` on its heartbeat (processBrokerHeartbeat: handleBrokerUnfenced). */
    public int[] unfence(int broker) {
        List<ApiMessageAndVersion> records = new ArrayList<>();
        replication.handleBrokerUnfenced(broker, cluster.registration(broker).epoch(), records);
        lastResponse = "";
        return withState(records, -1);
    }

    /** `broker` registers again (ClusterControlManager.registerBroker) with a new incarnation and broker epoch
     *  `epoch` (Kafka's is the registration record's offset); `previousEpoch` is the epoch it had when it shut
     *  down cleanly, -1 after an unclean shutdown (KIP-966's clean-shutdown detection). */
    public int[] register(int broker, long epoch, long previousEpoch) throws ReflectiveOperationException {
        clock.sleep(10_000);  // past the session timeout: the old incarnation's session has expired
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData()
            .setBrokerId(broker).setClusterId(CLUSTER_ID).setIncarnationId(new Uuid(broker, epoch))
            .setPreviousBrokerEpoch(previousEpoch)
            .setLogDirs(List.of(new Uuid(1000L + broker, 1L)));
        BrokerRegistrationRequestData.FeatureCollection supported = new BrokerRegistrationRequestData.FeatureCollection();
        supported.add(new BrokerRegistrationRequestData.Feature().setName(MetadataVersion.FEATURE_NAME)
            .setMinSupportedVersion((short) 1)  // 3.0-IV1: every KRaft metadata version
            .setMaxSupportedVersion(metadataVersion.featureLevel()));
        supported.add(new BrokerRegistrationRequestData.Feature().setName(ELR_FEATURE)
            .setMinSupportedVersion((short) 0).setMaxSupportedVersion((short) 1));
        request.setFeatures(supported);
        Object finalized = features.finalizedFeatures(Long.MAX_VALUE);
        Object result = null;
        for (Method m : ClusterControlManager.class.getMethods()) {
            if (!m.getName().equals("registerBroker")) continue;
            Object[] args = m.getParameterCount() == 4 ? new Object[] {request, epoch, finalized, true}
                : new Object[] {request, epoch, finalized};
            result = invokeMethod(m, cluster, args);
        }
        @SuppressWarnings("unchecked")
        List<ApiMessageAndVersion> records = ((ControllerResult<Object>) result).records();
        lastResponse = "";
        return withState(records, epoch);
    }

    // ------------------------------------------------------------------------------------------- helpers

    int[] withState(List<ApiMessageAndVersion> records, long offset) {
        replay(records, offset);
        lastRecords.clear();
        lastRecords.addAll(records);
        return state();
    }

    /** Apply committed records to the managers, as QuorumController's replay does. */
    void replay(List<ApiMessageAndVersion> records, long offset) {
        for (ApiMessageAndVersion r : records) {
            ApiMessage m = r.message();
            if (m instanceof PartitionChangeRecord) replication.replay((PartitionChangeRecord) m);
            else if (m instanceof PartitionRecord) replication.replay((PartitionRecord) m);
            else if (m instanceof TopicRecord) replication.replay((TopicRecord) m);
            else if (m instanceof RegisterBrokerRecord) cluster.replay((RegisterBrokerRecord) m, offset);
            else if (m instanceof BrokerRegistrationChangeRecord) cluster.replay((BrokerRegistrationChangeRecord) m);
            else if (m instanceof FenceBrokerRecord) cluster.replay((FenceBrokerRecord) m);
            else if (m instanceof UnfenceBrokerRecord) cluster.replay((UnfenceBrokerRecord) m);
            else if (m instanceof ConfigRecord) configs.replay((ConfigRecord) m);
            else if (m instanceof FeatureLevelRecord) features.replay((FeatureLevelRecord) m);
            else throw new IllegalStateException("the adapter does not replay " + m.getClass().getSimpleName());
        }
    }

    static ApiMessageAndVersion record(ApiMessage message) {
        return new ApiMessageAndVersion(message, message.highestSupportedVersion());
    }

    static List<Integer> list(int[] ids) {
        List<Integer> out = new ArrayList<>();
        for (int id : ids) out.add(id);
        return out;
    }

    static int mask(int[] ids) {
        int m = 0;
        for (int id : ids) m |= 1 << id;
        return m;
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static boolean hasMethod(Class<?> cls, String name) {
        return Arrays.stream(cls.getDeclaredMethods()).anyMatch(m -> m.getName().equals(name));
    }

    static void callIfPresent(Object target, String name, Object arg) throws ReflectiveOperationException {
        for (Method m : target.getClass().getDeclaredMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == 1) {
                invokeMethod(m, target, new Object[] {arg});
                return;
            }
        }
    }

    static Object invoke(Object target, String name, Object[] args) throws ReflectiveOperationException {
        for (Method m : target.getClass().getDeclaredMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                return invokeMethod(m, target, args);
            }
        }
        throw new NoSuchMethodException(name);
    }

    static Object invokeMethod(Method m, Object target, Object[] args) throws ReflectiveOperationException {
        m.setAccessible(true);
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {  // Kafka's own exception, not reflection's wrapper
            if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
            throw e;
        }
    }
}
