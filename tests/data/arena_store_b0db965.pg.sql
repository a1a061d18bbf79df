--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: arena_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.arena_settings (
    key character varying(64) NOT NULL,
    value character varying(256) NOT NULL
);


--
-- Name: battles; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.battles (
    id character varying(64) NOT NULL,
    session character varying(32) NOT NULL,
    mode character varying(16) NOT NULL,
    anony boolean NOT NULL,
    model_a character varying(256) NOT NULL,
    model_b character varying(256) NOT NULL,
    created double precision NOT NULL,
    updated double precision NOT NULL,
    payload json NOT NULL,
    tab character varying(64),
    closed boolean DEFAULT false NOT NULL
);


--
-- Name: votes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.votes (
    id integer NOT NULL,
    battle_id character varying(64) NOT NULL,
    voter character varying(32) NOT NULL,
    judge character varying(64) NOT NULL,
    mode character varying(16) NOT NULL,
    anony boolean NOT NULL,
    identity_leak boolean NOT NULL,
    winner character varying(16) NOT NULL,
    model_a character varying(256) NOT NULL,
    model_b character varying(256) NOT NULL,
    pair_id character varying(64) NOT NULL,
    tstamp double precision NOT NULL,
    record json NOT NULL,
    prompt_key character varying(16),
    flags json,
    counted boolean DEFAULT true NOT NULL,
    address character varying(16),
    lineage character varying(16)
);


--
-- Name: votes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.votes_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: votes_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.votes_id_seq OWNED BY public.votes.id;


--
-- Name: votes id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes ALTER COLUMN id SET DEFAULT nextval('public.votes_id_seq'::regclass);


--
-- Data for Name: arena_settings; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.arena_settings VALUES ('voter_salt', '986707a58c8ac1cdee7791c6ed954055');


--
-- Data for Name: battles; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.battles VALUES ('cmCjj_Q_XYo0ZE6pSgmhUXz7', 'b53d68837573bda6', 'prompt_set', true, 'smollm2-135m-instruct', 'gemma3-270m', 1795675933.799461, 1795675933.799461, '{"id": "cmCjj_Q_XYo0ZE6pSgmhUXz7", "session": "b53d68837573bda6", "mode": "prompt_set", "models": ["smollm2-135m-instruct", "gemma3-270m"], "families": ["smollm", "gemma"], "params": null, "turns": [{"prompt": "Write a short, friendly message inviting a neighbour to a summer barbecue.", "seed": null, "response_a": "Dear friend,\n\nI hope this message finds you well.\n\nAs you are planning a summer barbecue, I\u2019d be delighted to bring you a beautiful day to celebrate in your backyard!\n\nPlease let me know the date and time you would like to celebrate, and we can arrange a buffet for your family. If you\u2019d like, I can even bring a couple of my friends to join you and enjoy the barbecue together! [\u2026]", "response_b": "Dear Kevin,\nWe would like to invite you and your family to a summer barbecue with the neighbours this weekend at the local pub. We have arranged a full day of activities for you.\nThe restaurant will be open from 10am. The barbecue will be held on the 23rd and 24th of July. If you wish to bring your own barbecue, please do not hesitate to contact us.\nWe would appreciate it. [\u2026]", "latency": {}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675933.7869523, "ready_at": 1795675933.7994483, "pair_id": "693b250aeccc95bf", "prompt_id": "arena-001", "category": "writing", "source": "prompts_pairs.jsonl", "leaks": {"a": [], "b": [], "prompt": []}, "tab": "", "anony": true}', '', false);
INSERT INTO public.battles VALUES ('slg3x4nj2vEaJPwq3qK9EEL6', '415d1be2b0f03cf2', 'prompt_set', true, 'smollm2-135m-instruct', 'gemma3-270m', 1795675933.8437772, 1795675933.8437772, '{"id": "slg3x4nj2vEaJPwq3qK9EEL6", "session": "415d1be2b0f03cf2", "mode": "prompt_set", "models": ["smollm2-135m-instruct", "gemma3-270m"], "families": ["smollm", "gemma"], "params": null, "turns": [{"prompt": "If a train leaves at 3 pm and the trip takes 2 hours and 30 minutes, when does it arrive?", "seed": null, "response_a": "To solve this, we need to calculate the journey time and add it to the arrival time. The journey time is 2 hours and 30 minutes, so we divide it by 2 to find the arrival time. This gives us 2 * 30 = 60 minutes. [\u2026]", "response_b": "1:00 p.m.", "latency": {}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675933.8435838, "ready_at": 1795675933.8437693, "pair_id": "01b9fcb84b2d587f", "prompt_id": "arena-009", "category": "reasoning", "source": "prompts_pairs.jsonl", "leaks": {"a": [], "b": [], "prompt": []}, "tab": "", "anony": true}', '', false);
INSERT INTO public.battles VALUES ('lHvlwvmOFNTRBOskV1ltwu6U', 'b53d68837573bda6', 'prompt_set', true, 'gemma3-270m', 'smollm2-135m-instruct', 1795675933.88783, 1795675933.88783, '{"id": "lHvlwvmOFNTRBOskV1ltwu6U", "session": "b53d68837573bda6", "mode": "prompt_set", "models": ["gemma3-270m", "smollm2-135m-instruct"], "families": ["gemma", "smollm"], "params": null, "turns": [{"prompt": "Who wrote ''Romeo and Juliet''?", "seed": null, "response_a": "\"I don''t know, but I know it was written by Shakespeare.\"\n\"I knew it when I was a child.\"\n\"I know it for a reason.\"\n\"I know it is true.\"\n\nAnswer:\n\"I know this is true.\"\n\"I know this is true.\"\n\"I know this is true.\"\n\n\"I know this is true.\"\n\"I know this is true.\"\n\"I know this is true.\"", "response_b": "The anonymous author of Romeo and Juliet wrote the play by William Shakespeare, but the most widely accepted attribution is attributed to the 19th-century French playwright and director Fr\u00e9d\u00e9ric Toulmin.\n\nThe play revolves around the tragic love story between the titular characters, who were both killed in a tragic ball at the balcony of the balcony of the balcony of the Capulet Ball in 1595. [\u2026]", "latency": {}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675933.8875322, "ready_at": 1795675933.8878222, "pair_id": "5bcbc990570ff7c1", "prompt_id": "arena-028", "category": "humanities", "source": "prompts_pairs.jsonl", "leaks": {"a": [], "b": [], "prompt": []}, "tab": "", "anony": true}', '', false);
INSERT INTO public.battles VALUES ('niy3GzspsK1D5lgXmo8wpBZP', 'b53d68837573bda6', 'battle', true, 'gemma3-270m', 'smollm2-135m-instruct', 1795675935.4676373, 1795675935.4676373, '{"id": "niy3GzspsK1D5lgXmo8wpBZP", "session": "b53d68837573bda6", "mode": "battle", "models": ["gemma3-270m", "smollm2-135m-instruct"], "families": ["gemma", "smollm"], "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "turns": [{"prompt": "Name a colour.", "seed": 766593300, "response_a": "blue", "response_b": "The colour is a rare and precious one", "latency": {"started": 1795675933.9156468, "queued": 0.0, "ttft_b": 0.4866, "ttft_a": 0.6276, "total_b": 1.4755, "total_a": 1.5517}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675933.9155958, "ready_at": 1795675935.4676251, "pair_id": null, "prompt_id": null, "category": null, "source": null, "leaks": {"a": [], "b": [], "prompt": []}, "tab": "", "anony": true}', '', false);
INSERT INTO public.battles VALUES ('Pg_Npdb244hBRahq_zoZeP21', '20621de312698a15', 'battle', true, 'smollm2-135m-instruct', 'gemma3-270m', 1795675939.4442244, 1795675939.4442244, '{"id": "Pg_Npdb244hBRahq_zoZeP21", "session": "20621de312698a15", "mode": "battle", "models": ["smollm2-135m-instruct", "gemma3-270m"], "families": ["smollm", "gemma"], "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "turns": [{"prompt": "Name a fruit.", "seed": 931029375, "response_a": "The fruit I mentioned is the Banana", "response_b": "apple", "latency": {"started": 1795675936.151712, "queued": 0.0, "ttft_a": 0.2107, "ttft_b": 0.4555, "total_b": 0.9559, "total_a": 3.2922}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675936.15166, "ready_at": 1795675939.4442124, "pair_id": null, "prompt_id": null, "category": null, "source": null, "leaks": {"a": [], "b": [], "prompt": []}, "tab": "", "anony": true}', '', false);


--
-- Data for Name: votes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.votes VALUES (1, 'cmCjj_Q_XYo0ZE6pSgmhUXz7', 'b53d68837573bda6', 'human:b53d68837573bda6', 'prompt_set', true, false, 'model_a', 'smollm2-135m-instruct', 'gemma3-270m', '693b250aeccc95bf', 1795675933.830011, '{"pair_id": "693b250aeccc95bf", "prompt": "Write a short, friendly message inviting a neighbour to a summer barbecue.", "model_a": "smollm2-135m-instruct", "model_b": "gemma3-270m", "response_a": "Dear friend,\n\nI hope this message finds you well.\n\nAs you are planning a summer barbecue, I\u2019d be delighted to bring you a beautiful day to celebrate in your backyard!\n\nPlease let me know the date and time you would like to celebrate, and we can arrange a buffet for your family. If you\u2019d like, I can even bring a couple of my friends to join you and enjoy the barbecue together! [\u2026]", "response_b": "Dear Kevin,\nWe would like to invite you and your family to a summer barbecue with the neighbours this weekend at the local pub. We have arranged a full day of activities for you.\nThe restaurant will be open from 10am. The barbecue will be held on the 23rd and 24th of July. If you wish to bring your own barbecue, please do not hesitate to contact us.\nWe would appreciate it. [\u2026]", "winner": "model_a", "judge": "human:b53d68837573bda6", "judge_type": "human", "family_a": "smollm", "family_b": "gemma", "prompt_id": "arena-001", "category": "writing", "turn": 1, "tstamp": 1795675933.830011, "conversation": {"model_a": [{"role": "user", "content": "Write a short, friendly message inviting a neighbour to a summer barbecue."}, {"role": "assistant", "content": "Dear friend,\n\nI hope this message finds you well.\n\nAs you are planning a summer barbecue, I\u2019d be delighted to bring you a beautiful day to celebrate in your backyard!\n\nPlease let me know the date and time you would like to celebrate, and we can arrange a buffet for your family. If you\u2019d like, I can even bring a couple of my friends to join you and enjoy the barbecue together! [\u2026]"}], "model_b": [{"role": "user", "content": "Write a short, friendly message inviting a neighbour to a summer barbecue."}, {"role": "assistant", "content": "Dear Kevin,\nWe would like to invite you and your family to a summer barbecue with the neighbours this weekend at the local pub. We have arranged a full day of activities for you.\nThe restaurant will be open from 10am. The barbecue will be held on the 23rd and 24th of July. If you wish to bring your own barbecue, please do not hesitate to contact us.\nWe would appreciate it. [\u2026]"}]}, "meta": {"battle_id": "cmCjj_Q_XYo0ZE6pSgmhUXz7", "voter": "b53d68837573bda6", "mode": "prompt_set", "anony": true, "identity_leak": false, "served_at": 1795675933.7869523, "ready_at": 1795675933.7994483, "source": "prompts_pairs.jsonl"}, "version": 1}', '003907e380b75d49', '[]', true, NULL, NULL);
INSERT INTO public.votes VALUES (2, 'slg3x4nj2vEaJPwq3qK9EEL6', '415d1be2b0f03cf2', 'human:415d1be2b0f03cf2', 'prompt_set', true, false, 'model_b', 'smollm2-135m-instruct', 'gemma3-270m', '01b9fcb84b2d587f', 1795675933.8674104, '{"pair_id": "01b9fcb84b2d587f", "prompt": "If a train leaves at 3 pm and the trip takes 2 hours and 30 minutes, when does it arrive?", "model_a": "smollm2-135m-instruct", "model_b": "gemma3-270m", "response_a": "To solve this, we need to calculate the journey time and add it to the arrival time. The journey time is 2 hours and 30 minutes, so we divide it by 2 to find the arrival time. This gives us 2 * 30 = 60 minutes. [\u2026]", "response_b": "1:00 p.m.", "winner": "model_b", "judge": "human:415d1be2b0f03cf2", "judge_type": "human", "family_a": "smollm", "family_b": "gemma", "prompt_id": "arena-009", "category": "reasoning", "turn": 1, "tstamp": 1795675933.8674104, "conversation": {"model_a": [{"role": "user", "content": "If a train leaves at 3 pm and the trip takes 2 hours and 30 minutes, when does it arrive?"}, {"role": "assistant", "content": "To solve this, we need to calculate the journey time and add it to the arrival time. The journey time is 2 hours and 30 minutes, so we divide it by 2 to find the arrival time. This gives us 2 * 30 = 60 minutes. [\u2026]"}], "model_b": [{"role": "user", "content": "If a train leaves at 3 pm and the trip takes 2 hours and 30 minutes, when does it arrive?"}, {"role": "assistant", "content": "1:00 p.m."}]}, "meta": {"battle_id": "slg3x4nj2vEaJPwq3qK9EEL6", "voter": "415d1be2b0f03cf2", "mode": "prompt_set", "anony": true, "identity_leak": false, "served_at": 1795675933.8435838, "ready_at": 1795675933.8437693, "source": "prompts_pairs.jsonl"}, "version": 1}', '7224ddff51d6fbc8', '[]', true, NULL, NULL);
INSERT INTO public.votes VALUES (3, 'lHvlwvmOFNTRBOskV1ltwu6U', 'b53d68837573bda6', 'human:b53d68837573bda6', 'prompt_set', true, false, 'tie', 'gemma3-270m', 'smollm2-135m-instruct', '5bcbc990570ff7c1', 1795675933.9084437, '{"pair_id": "5bcbc990570ff7c1", "prompt": "Who wrote ''Romeo and Juliet''?", "model_a": "gemma3-270m", "model_b": "smollm2-135m-instruct", "response_a": "\"I don''t know, but I know it was written by Shakespeare.\"\n\"I knew it when I was a child.\"\n\"I know it for a reason.\"\n\"I know it is true.\"\n\nAnswer:\n\"I know this is true.\"\n\"I know this is true.\"\n\"I know this is true.\"\n\n\"I know this is true.\"\n\"I know this is true.\"\n\"I know this is true.\"", "response_b": "The anonymous author of Romeo and Juliet wrote the play by William Shakespeare, but the most widely accepted attribution is attributed to the 19th-century French playwright and director Fr\u00e9d\u00e9ric Toulmin.\n\nThe play revolves around the tragic love story between the titular characters, who were both killed in a tragic ball at the balcony of the balcony of the balcony of the Capulet Ball in 1595. [\u2026]", "winner": "tie", "judge": "human:b53d68837573bda6", "judge_type": "human", "family_a": "gemma", "family_b": "smollm", "prompt_id": "arena-028", "category": "humanities", "turn": 1, "tstamp": 1795675933.9084437, "conversation": {"model_a": [{"role": "user", "content": "Who wrote ''Romeo and Juliet''?"}, {"role": "assistant", "content": "\"I don''t know, but I know it was written by Shakespeare.\"\n\"I knew it when I was a child.\"\n\"I know it for a reason.\"\n\"I know it is true.\"\n\nAnswer:\n\"I know this is true.\"\n\"I know this is true.\"\n\"I know this is true.\"\n\n\"I know this is true.\"\n\"I know this is true.\"\n\"I know this is true.\""}], "model_b": [{"role": "user", "content": "Who wrote ''Romeo and Juliet''?"}, {"role": "assistant", "content": "The anonymous author of Romeo and Juliet wrote the play by William Shakespeare, but the most widely accepted attribution is attributed to the 19th-century French playwright and director Fr\u00e9d\u00e9ric Toulmin.\n\nThe play revolves around the tragic love story between the titular characters, who were both killed in a tragic ball at the balcony of the balcony of the balcony of the Capulet Ball in 1595. [\u2026]"}]}, "meta": {"battle_id": "lHvlwvmOFNTRBOskV1ltwu6U", "voter": "b53d68837573bda6", "mode": "prompt_set", "anony": true, "identity_leak": false, "served_at": 1795675933.8875322, "ready_at": 1795675933.8878222, "source": "prompts_pairs.jsonl"}, "version": 1}', '5794749594072b35', '[]', true, NULL, NULL);
INSERT INTO public.votes VALUES (4, 'niy3GzspsK1D5lgXmo8wpBZP', 'b53d68837573bda6', 'human:b53d68837573bda6', 'battle', true, false, 'model_a', 'gemma3-270m', 'smollm2-135m-instruct', '4e774c8870c38516', 1795675936.1378915, '{"pair_id": "4e774c8870c38516", "prompt": "Name a colour.", "model_a": "gemma3-270m", "model_b": "smollm2-135m-instruct", "response_a": "blue", "response_b": "The colour is a rare and precious one", "winner": "model_a", "judge": "human:b53d68837573bda6", "judge_type": "human", "family_a": "gemma", "family_b": "smollm", "turn": 1, "tstamp": 1795675936.1378915, "conversation": {"model_a": [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "blue"}], "model_b": [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "The colour is a rare and precious one"}]}, "meta": {"battle_id": "niy3GzspsK1D5lgXmo8wpBZP", "voter": "b53d68837573bda6", "mode": "battle", "anony": true, "identity_leak": false, "served_at": 1795675933.9155958, "ready_at": 1795675935.4676251, "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "seeds": [766593300], "latency": [{"started": 1795675933.9156468, "queued": 0.0, "ttft_b": 0.4866, "ttft_a": 0.6276, "total_b": 1.4755, "total_a": 1.5517}], "regenerations": 0}, "version": 1}', 'f973b4c2c3fa83f1', '[]', true, NULL, NULL);
INSERT INTO public.votes VALUES (5, 'Pg_Npdb244hBRahq_zoZeP21', '20621de312698a15', 'human:20621de312698a15', 'battle', true, false, 'tie (bothbad)', 'smollm2-135m-instruct', 'gemma3-270m', '52452810cd804298', 1795675939.5120742, '{"pair_id": "52452810cd804298", "prompt": "Name a fruit.", "model_a": "smollm2-135m-instruct", "model_b": "gemma3-270m", "response_a": "The fruit I mentioned is the Banana", "response_b": "apple", "winner": "tie (bothbad)", "judge": "human:20621de312698a15", "judge_type": "human", "family_a": "smollm", "family_b": "gemma", "turn": 1, "tstamp": 1795675939.5120742, "conversation": {"model_a": [{"role": "user", "content": "Name a fruit."}, {"role": "assistant", "content": "The fruit I mentioned is the Banana"}], "model_b": [{"role": "user", "content": "Name a fruit."}, {"role": "assistant", "content": "apple"}]}, "meta": {"battle_id": "Pg_Npdb244hBRahq_zoZeP21", "voter": "20621de312698a15", "mode": "battle", "anony": true, "identity_leak": false, "served_at": 1795675936.15166, "ready_at": 1795675939.4442124, "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "seeds": [931029375], "latency": [{"started": 1795675936.151712, "queued": 0.0, "ttft_a": 0.2107, "ttft_b": 0.4555, "total_b": 0.9559, "total_a": 3.2922}], "regenerations": 0}, "version": 1}', 'be0d8c8294c24a9f', '[]', true, NULL, NULL);


--
-- Name: votes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.votes_id_seq', 5, true);


--
-- Name: arena_settings arena_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.arena_settings
    ADD CONSTRAINT arena_settings_pkey PRIMARY KEY (key);


--
-- Name: battles battles_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.battles
    ADD CONSTRAINT battles_pkey PRIMARY KEY (id);


--
-- Name: votes votes_battle_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_battle_id_key UNIQUE (battle_id);


--
-- Name: votes votes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_pkey PRIMARY KEY (id);


--
-- Name: ix_battles_session; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_battles_session ON public.battles USING btree (session);


--
-- Name: ix_votes_address; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_votes_address ON public.votes USING btree (address);


--
-- Name: ix_votes_counted; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_votes_counted ON public.votes USING btree (counted);


--
-- Name: ix_votes_lineage; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_votes_lineage ON public.votes USING btree (lineage);


--
-- Name: ix_votes_prompt_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_votes_prompt_key ON public.votes USING btree (prompt_key);


--
-- Name: ix_votes_voter; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_votes_voter ON public.votes USING btree (voter);


--
-- Name: votes votes_battle_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_battle_id_fkey FOREIGN KEY (battle_id) REFERENCES public.battles(id);


--
-- PostgreSQL database dump complete
--


